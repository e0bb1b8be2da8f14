package register

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink the register's goroutines may write to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSecretRequired: a register started with a secret answers 401 to
// every call that does not present it (none, or a wrong one, on every
// endpoint, through the client and as raw HTTP), and none of those calls
// reaches the apply log; the register's own log counts them. The call
// with the secret is served and logged as usual.
func TestSecretRequired(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	path := logPath(t)
	var logBuf syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Config{Listen: "127.0.0.1:0", LogPath: path, Mode: ModeOn, Secret: secret,
			Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}, func(a string) { ready <- a })
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Serve: %v", err)
	}
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	defer stop()
	bg := context.Background()

	refused := 0
	for _, c := range []*Client{NewClient(addr, 5*time.Second, ""), NewClient(addr, 5*time.Second, "wrong"),
		NewClient(addr, 5*time.Second, secret+"x")} {
		_, err := c.Write(bg, WriteRequest{Key: "k", Value: 7, Token: tok(1), Process: 1})
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized || !IsDefinite(err) {
			t.Errorf("write with secret %q: %v, want a definite 401", c.auth, err)
		}
		if _, err := c.Read(bg, ReadRequest{Key: "k", Token: tok(1), Process: 1}); !IsDefinite(err) {
			t.Errorf("read with secret %q: %v, want a definite 401", c.auth, err)
		}
		if _, err := c.State(bg); err == nil {
			t.Errorf("state with secret %q answered", c.auth)
		}
		if err := c.Healthy(bg); err == nil {
			t.Errorf("healthz with secret %q answered", c.auth)
		}
		refused += 4
	}
	// Raw HTTP, as an anonymous process on the host would call it.
	for _, h := range []string{"", "Bearer", "Bearer ", "Basic " + secret, "bearer " + secret} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/write",
			strings.NewReader(`{"key":"k","value":9,"token":5,"process":9}`))
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("raw write with Authorization %q: HTTP %d, want 401", h, resp.StatusCode)
		}
		refused++
	}
	entries, err := ReadApplyLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("refused calls reached the apply log: %+v", entries)
	}

	ok := NewClient(addr, 5*time.Second, secret)
	if rep, err := ok.Write(bg, WriteRequest{Key: "k", Value: 7, Token: tok(1), Process: 1}); err != nil || !rep.Accepted {
		t.Fatalf("write with the secret: %+v, %v", rep, err)
	}
	if err := ok.Healthy(bg); err != nil {
		t.Errorf("healthz with the secret: %v", err)
	}
	entries, err = ReadApplyLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Value != 7 || entries[0].Process != 1 {
		t.Fatalf("apply log after one admitted write: %+v", entries)
	}

	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	out := logBuf.String()
	if want := "refused_calls=" + strconv.Itoa(refused); !strings.Contains(out, want) {
		t.Errorf("register log does not count %d refused calls (%s):\n%s", refused, want, out)
	}
	if strings.Count(out, "refused a call") != min(refused, refusedLogged) {
		t.Errorf("register log has %d refusal lines, want %d", strings.Count(out, "refused a call"), min(refused, refusedLogged))
	}
	if strings.Contains(out, secret) {
		t.Errorf("register log contains the secret")
	}
}
