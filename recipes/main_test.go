package recipes

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/proc"
)

// zkAddr is the client address of the one-node ensemble shared by the
// package's tests ("" when ZooKeeper is not installed).
var zkAddr string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests starts one real ZooKeeper for the whole package: a JVM takes
// seconds to start, and the tests run one after another anyway.
func runTests(m *testing.M) int {
	_, javaErr := exec.LookPath("java")
	_, cpErr := local.DefaultClassPath()
	if javaErr != nil || cpErr != nil {
		fmt.Fprintf(os.Stderr, "no ZooKeeper (java: %v, jars: %v): ZooKeeper tests skip\n", javaErr, cpErr)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "zkchaos-recipes-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := local.New(ctx, local.Config{Nodes: 1, Dir: dir, Env: proc.Env("test-recipes", os.Getpid())})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := c.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "close cluster:", err)
		}
	}()
	if err := c.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := c.WaitReady(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	zkAddr = c.ConnectString()
	return m.Run()
}

func needZK(t *testing.T) {
	t.Helper()
	if zkAddr == "" {
		t.Skip("no ZooKeeper")
	}
}

// testLogger logs to the test's output until the test ends and drops
// lines after that: client goroutines may outlive the test by a moment.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{w: t.Output()}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct {
	mu   sync.Mutex
	w    io.Writer
	done bool
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(b), nil
	}
	return w.w.Write(b)
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// wchp asks the server which sessions watch which paths (four-letter word
// wchp), so a test can see the recipe's watches from the server's side.
func wchp(t *testing.T, addr string) map[string][]int64 {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("wchp: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "wchp"); err != nil {
		t.Fatalf("wchp: %v", err)
	}
	out := map[string][]int64{}
	cur := ""
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "/"):
			cur = strings.TrimSpace(line)
			out[cur] = out[cur][:0:0]
		case strings.HasPrefix(strings.TrimSpace(line), "0x") && cur != "":
			var id int64
			if _, err := fmt.Sscanf(strings.TrimSpace(line), "0x%x", &id); err == nil {
				out[cur] = append(out[cur], id)
			}
		}
	}
	return out
}

// proxy stands between a client and the server so a test can cut the
// client off (the server keeps running and expires the session on its own
// clock, which pausing the server would not do reliably).
type proxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	blocked bool
	conns   []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.blocked {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close(); c.Close() }()
		go func() { io.Copy(c, s); s.Close(); c.Close() }()
	}
}

// block drops every connection and refuses new ones.
func (p *proxy) block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) unblock() {
	p.mu.Lock()
	p.blocked = false
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.ln.Close()
	p.block()
}
