package register

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// running is one register started by a test.
type running struct {
	addr    string
	logPath string
	c       *Client
	cancel  context.CancelFunc
	done    chan error
}

// start runs Serve on 127.0.0.1:0 and waits (via ready) until it listens.
func start(t testing.TB, logPath, mode string) *running {
	t.Helper()
	return startCfg(t, Config{LogPath: logPath, Mode: mode})
}

// startCfg is start with a whole Config (Listen and Logger are set here).
func startCfg(t testing.TB, cfg Config) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	cfg.Listen = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		done <- Serve(ctx, cfg, func(addr string) { ready <- addr })
	}()
	r := &running{logPath: cfg.LogPath, cancel: cancel, done: done}
	select {
	case r.addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Serve returned before ready: %v", err)
	}
	r.c = NewClient("http://"+r.addr, 10*time.Second, "")
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop shuts the register down and fails the test if Serve did not return
// nil. Safe to call twice.
func (r *running) stop(t testing.TB) {
	t.Helper()
	if r.done == nil {
		return
	}
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	r.done = nil
}

func tok(t int64) *int64 { return &t }

func (r *running) write(t *testing.T, key string, v int64, token *int64) Reply {
	t.Helper()
	rep, err := r.c.Write(context.Background(), WriteRequest{Key: key, Value: v, Token: token, Process: 1})
	if err != nil {
		t.Fatalf("write %s=%d: %v", key, v, err)
	}
	return rep
}

func (r *running) read(t *testing.T, key string, token *int64) Reply {
	t.Helper()
	rep, err := r.c.Read(context.Background(), ReadRequest{Key: key, Token: token, Process: 2})
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return rep
}

func (r *running) state(t *testing.T) map[string]KeyState {
	t.Helper()
	st, err := r.c.State(context.Background())
	if err != nil {
		t.Fatalf("state: %v", err)
	}
	return st
}

func logPath(t *testing.T) string { return filepath.Join(t.TempDir(), "apply.log") }

// step is one operation of a scripted scenario and what must come of it.
type step struct {
	op       string
	token    *int64
	value    int64
	accepted bool
	reason   string // substring; "" means no reason expected
	want     KeyState
}

func runScript(t *testing.T, mode string, steps []step) *running {
	t.Helper()
	r := start(t, logPath(t), mode)
	for i, s := range steps {
		var rep Reply
		if s.op == OpWrite {
			rep = r.write(t, "k", s.value, s.token)
		} else {
			rep = r.read(t, "k", s.token)
		}
		if rep.Accepted != s.accepted {
			t.Fatalf("step %d (%s token=%v): accepted=%v, want %v (reason %q)", i, s.op, deref(s.token), rep.Accepted, s.accepted, rep.Reason)
		}
		if s.reason == "" && rep.Reason != "" {
			t.Errorf("step %d: unexpected reason %q", i, rep.Reason)
		}
		if s.reason != "" && !strings.Contains(rep.Reason, s.reason) {
			t.Errorf("step %d: reason %q, want it to contain %q", i, rep.Reason, s.reason)
		}
		got := KeyState{Value: rep.Value, Token: rep.Token, Fence: rep.Fence}
		if got != s.want {
			t.Errorf("step %d: state %+v, want %+v", i, got, s.want)
		}
		if rep.Seq != int64(i+1) {
			t.Errorf("step %d: seq %d, want %d", i, rep.Seq, i+1)
		}
	}
	return r
}

func deref(p *int64) any {
	if p == nil {
		return "none"
	}
	return *p
}

func TestModeOffAcceptsEverything(t *testing.T) {
	runScript(t, ModeOff, []step{
		{op: OpWrite, token: nil, value: 1, accepted: true, want: KeyState{1, NoToken, NoToken}},
		{op: OpWrite, token: tok(10), value: 2, accepted: true, want: KeyState{2, 10, 10}},
		{op: OpWrite, token: tok(3), value: 3, accepted: true, want: KeyState{3, 3, 10}},
		{op: OpRead, token: tok(1), accepted: true, want: KeyState{3, 3, 10}},
		{op: OpRead, token: tok(20), accepted: true, want: KeyState{3, 3, 20}},
		{op: OpWrite, token: tok(3), value: 4, accepted: true, want: KeyState{4, 3, 20}},
	})
}

func TestModeOnRules(t *testing.T) {
	runScript(t, ModeOn, []step{
		{op: OpRead, token: nil, accepted: true, want: KeyState{0, NoToken, NoToken}},
		{op: OpWrite, token: tok(5), value: 1, accepted: true, want: KeyState{1, 5, 5}},
		// Several writes under one grant are fine in mode on.
		{op: OpWrite, token: tok(5), value: 2, accepted: true, want: KeyState{2, 5, 5}},
		{op: OpWrite, token: tok(5), value: 3, accepted: true, want: KeyState{3, 5, 5}},
		{op: OpWrite, token: tok(4), value: 9, accepted: false, reason: "stale token 4 < fence 5", want: KeyState{3, 5, 5}},
		// A fenced read moves the fence without writing.
		{op: OpRead, token: tok(7), accepted: true, want: KeyState{3, 5, 7}},
		{op: OpWrite, token: tok(5), value: 9, accepted: false, reason: "stale token 5 < fence 7", want: KeyState{3, 5, 7}},
		{op: OpRead, token: tok(6), accepted: false, reason: "stale token 6 < fence 7", want: KeyState{3, 5, 7}},
		// A tokenless read is let in and raises nothing.
		{op: OpRead, token: nil, accepted: true, want: KeyState{3, 5, 7}},
		{op: OpWrite, token: tok(7), value: 4, accepted: true, want: KeyState{4, 7, 7}},
		{op: OpWrite, token: tok(100), value: 5, accepted: true, want: KeyState{5, 100, 100}},
	})
}

func TestModeStrictRules(t *testing.T) {
	runScript(t, ModeStrict, []step{
		{op: OpWrite, token: tok(5), value: 1, accepted: true, want: KeyState{1, 5, 5}},
		// One write per grant.
		{op: OpWrite, token: tok(5), value: 2, accepted: false, reason: "token 5 <= last write token 5", want: KeyState{1, 5, 5}},
		{op: OpWrite, token: tok(4), value: 2, accepted: false, reason: "stale token 4 < fence 5", want: KeyState{1, 5, 5}},
		// A read at the fence is fine; a write at the fence is fine once
		// (the fence came from a read, not a write).
		{op: OpRead, token: tok(6), accepted: true, want: KeyState{1, 5, 6}},
		{op: OpRead, token: tok(6), accepted: true, want: KeyState{1, 5, 6}},
		{op: OpWrite, token: tok(6), value: 3, accepted: true, want: KeyState{3, 6, 6}},
		{op: OpWrite, token: tok(6), value: 4, accepted: false, reason: "token 6 <= last write token 6", want: KeyState{3, 6, 6}},
		{op: OpRead, token: nil, accepted: true, want: KeyState{3, 6, 6}},
	})
}

// lostUpdate plays the scenario of the package comment and returns the
// replies of A's and B's writes and the final value.
func lostUpdate(t *testing.T, mode string) (a, b Reply, final int64) {
	r := start(t, logPath(t), mode)
	if rep := r.write(t, "k", 5, tok(99)); !rep.Accepted {
		t.Fatalf("setup write rejected: %s", rep.Reason)
	}
	ra := r.read(t, "k", tok(100)) // A reads 5, then pauses
	rb := r.read(t, "k", tok(101)) // B acquires and reads 5
	if !ra.Accepted || !rb.Accepted || ra.Value != 5 || rb.Value != 5 {
		t.Fatalf("reads: A %+v, B %+v", ra, rb)
	}
	a = r.write(t, "k", ra.Value+1, tok(100)) // A wakes and writes
	b = r.write(t, "k", rb.Value+1, tok(101))
	return a, b, r.read(t, "k", nil).Value
}

func TestLostUpdatePreventedInModeOn(t *testing.T) {
	a, b, final := lostUpdate(t, ModeOn)
	if a.Accepted {
		t.Fatalf("A's stale write was accepted: %+v", a)
	}
	if a.Reason != "stale token 100 < fence 101" {
		t.Errorf("reason %q", a.Reason)
	}
	if !b.Accepted || final != 6 {
		t.Fatalf("B's write: %+v, final %d", b, final)
	}
}

func TestLostUpdateAllowedInModeOff(t *testing.T) {
	a, b, final := lostUpdate(t, ModeOff)
	if !a.Accepted || !b.Accepted {
		t.Fatalf("mode off rejected a write: A %+v, B %+v", a, b)
	}
	// Two increments from 5 and the value is 6: an update was lost.
	if final != 6 {
		t.Fatalf("final %d", final)
	}
}

func TestBadRequestsLogNothing(t *testing.T) {
	for _, mode := range []string{ModeOn, ModeStrict} {
		t.Run(mode, func(t *testing.T) {
			r := start(t, logPath(t), mode)
			cases := []struct{ path, body, want string }{
				{"/write", `{"key":"k","value":1`, "bad JSON"},
				{"/write", `not json`, "bad JSON"},
				{"/write", ``, "empty body"},
				{"/write", `{"key":"","value":1,"token":1}`, "empty key"},
				{"/write", `{"value":1,"token":1}`, "empty key"},
				{"/write", `{"key":"k","value":1,"tokne":1}`, "unknown field"},
				{"/write", `{"key":"k","value":1}`, "token required"},
				{"/write", `{"key":"k","value":1,"token":-1}`, "negative token"},
				{"/write", `{"key":"k","value":1,"token":1} {}`, "trailing data"},
				{"/write", `{"key":"k","value":"1","token":1}`, "bad JSON"},
				{"/read", `{"key":""}`, "empty key"},
				{"/read", `{"key":"k","extra":true}`, "unknown field"},
				{"/read", `[1]`, "bad JSON"},
			}
			for _, tc := range cases {
				resp, err := http.Post("http://"+r.addr+tc.path, "application/json", strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("%s %s: status %d, want 400", tc.path, tc.body, resp.StatusCode)
				}
				if !strings.Contains(string(body), tc.want) {
					t.Errorf("%s %s: body %q, want it to mention %q", tc.path, tc.body, body, tc.want)
				}
			}
			// Through the client, a 400 is definite.
			_, err := r.c.Write(context.Background(), WriteRequest{Key: "k", Value: 1})
			if err == nil || !IsDefinite(err) {
				t.Errorf("tokenless write: err %v, definite %v", err, IsDefinite(err))
			}
			if st := r.state(t); len(st) != 0 {
				t.Errorf("state after bad requests: %v", st)
			}
			entries, err := ReadApplyLog(r.logPath)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 0 {
				t.Fatalf("bad requests were logged: %+v", entries)
			}
			// And the register still works, starting at seq 1.
			if rep := r.write(t, "k", 1, tok(1)); !rep.Accepted || rep.Seq != 1 {
				t.Fatalf("write after bad requests: %+v", rep)
			}
		})
	}
}

func TestTokenlessWriteAllowedInModeOff(t *testing.T) {
	r := start(t, logPath(t), ModeOff)
	if rep := r.write(t, "k", 3, nil); !rep.Accepted || rep.Token != NoToken {
		t.Fatalf("%+v", rep)
	}
}

// TestEntryDurableBeforeReply checks the ordering that makes the log the
// ground truth: by the time a reply arrives, its entry is in the file.
func TestEntryDurableBeforeReply(t *testing.T) {
	r := start(t, logPath(t), ModeOn)
	for i := int64(1); i <= 5; i++ {
		rep := r.write(t, "k", i, tok(i))
		entries, err := ReadApplyLog(r.logPath)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(entries)) != rep.Seq {
			t.Fatalf("after reply seq %d the log holds %d entries", rep.Seq, len(entries))
		}
		e := entries[len(entries)-1]
		if e.Op != OpWrite || e.Value != i || e.Token != i || !e.HasToken || !e.Accepted || e.Mode != ModeOn || e.Process != 1 {
			t.Fatalf("entry %+v", e)
		}
	}
}

func TestRestartReplaysLog(t *testing.T) {
	path := logPath(t)
	r := start(t, path, ModeOn)
	r.write(t, "a", 1, tok(10))
	r.write(t, "b", 2, tok(11))
	r.read(t, "a", tok(12))
	r.write(t, "a", 3, tok(9)) // rejected, but logged
	before := r.state(t)
	r.stop(t)

	r2 := start(t, path, ModeStrict)
	if got := r2.state(t); !reflect.DeepEqual(got, before) {
		t.Fatalf("state after restart %v, before %v", got, before)
	}
	// Strict now: token 11 == last write token of b, rejected.
	rep := r2.write(t, "b", 5, tok(11))
	if rep.Seq != 5 || rep.Accepted {
		t.Fatalf("first op after restart: %+v, want seq 5 rejected", rep)
	}
	rep = r2.write(t, "a", 4, tok(12))
	if rep.Seq != 6 || !rep.Accepted || rep.Value != 4 {
		t.Fatalf("%+v", rep)
	}
	final := r2.state(t)
	r2.stop(t)

	entries, err := ReadApplyLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 6 || entries[4].Mode != ModeStrict || entries[3].Mode != ModeOn {
		t.Fatalf("entries %+v", entries)
	}
	assertReplays(t, entries, final)
}

// TestRestartAfterTornWrite simulates a SIGKILL mid-append: the torn line
// must be cut off, not left in the middle of the log.
func TestRestartAfterTornWrite(t *testing.T) {
	path := logPath(t)
	r := start(t, path, ModeOn)
	r.write(t, "k", 1, tok(1))
	r.write(t, "k", 2, tok(1))
	r.stop(t)
	appendRaw(t, path, `{"seq":3,"wall":1,"op":"wri`)

	r2 := start(t, path, ModeOn)
	rep := r2.write(t, "k", 3, tok(2))
	if rep.Seq != 3 || !rep.Accepted {
		t.Fatalf("%+v", rep)
	}
	r2.stop(t)
	entries, err := ReadApplyLog(path)
	if err != nil {
		t.Fatalf("log after torn-write restart: %v", err)
	}
	if len(entries) != 3 || entries[2].Value != 3 {
		t.Fatalf("entries %+v", entries)
	}
}

// TestRestartAfterUnterminatedLine: a complete entry whose newline did not
// make it is kept (the reader keeps it too) and terminated.
func TestRestartAfterUnterminatedLine(t *testing.T) {
	path := logPath(t)
	r := start(t, path, ModeOn)
	r.write(t, "k", 1, tok(1))
	r.stop(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.TrimSuffix(raw, []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	r2 := start(t, path, ModeOn)
	if rep := r2.write(t, "k", 2, tok(1)); rep.Seq != 2 || rep.Value != 2 {
		t.Fatalf("%+v", rep)
	}
	r2.stop(t)
	if entries, err := ReadApplyLog(path); err != nil || len(entries) != 2 {
		t.Fatalf("entries %d, err %v", len(entries), err)
	}
}

func TestServeRefusesCorruptLog(t *testing.T) {
	path := logPath(t)
	r := start(t, path, ModeOn)
	r.write(t, "k", 1, tok(1))
	r.stop(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte("garbage\n"), raw...), 0o644); err != nil {
		t.Fatal(err)
	}
	err = Serve(context.Background(), Config{Listen: "127.0.0.1:0", LogPath: path, Mode: ModeOn},
		func(string) { t.Error("ready called on a corrupt log") })
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("err %v, want one naming line 1", err)
	}
}

func TestServeRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Listen: "127.0.0.1:0", LogPath: logPath(t), Mode: "maybe"},
		{Listen: "127.0.0.1:0", LogPath: logPath(t), Mode: ""},
		{Listen: "127.0.0.1:0", LogPath: "", Mode: ModeOn},
		{Listen: "127.0.0.1:0", LogPath: filepath.Join(t.TempDir(), "missing", "dir", "log"), Mode: ModeOn},
		{Listen: "256.0.0.1:0", LogPath: logPath(t), Mode: ModeOn},
	} {
		if err := Serve(context.Background(), cfg, func(string) { t.Errorf("ready called for %+v", cfg) }); err == nil {
			t.Errorf("Serve(%+v) = nil", cfg)
		}
	}
}

// TestConcurrentClients hammers one register and checks that commit order,
// the log and the live state agree: Seq gap-free, every reply matching its
// entry, every logged decision what the mode's rule says, replay == /state.
func TestConcurrentClients(t *testing.T) {
	const workers, ops = 8, 200
	r := start(t, logPath(t), ModeOn)
	keys := []string{"x", "y", "z"}
	replies := make([][]Reply, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for i := range ops {
				key := keys[rng.IntN(len(keys))]
				var token *int64
				if rng.IntN(10) > 0 {
					token = tok(int64(i + rng.IntN(20)))
				}
				var rep Reply
				var err error
				if token != nil && rng.IntN(2) == 0 {
					rep, err = r.c.Write(context.Background(), WriteRequest{Key: key, Value: int64(w*1000 + i), Token: token, Process: w})
				} else {
					rep, err = r.c.Read(context.Background(), ReadRequest{Key: key, Token: token, Process: w})
				}
				if err != nil {
					errs <- fmt.Errorf("worker %d op %d: %w", w, i, err)
					return
				}
				replies[w] = append(replies[w], rep)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	state := r.state(t)
	entries, err := ReadApplyLog(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != workers*ops {
		t.Fatalf("%d entries, want %d", len(entries), workers*ops)
	}
	seen := make(map[int64]bool)
	for w, reps := range replies {
		for _, rep := range reps {
			if rep.Seq < 1 || rep.Seq > int64(len(entries)) || seen[rep.Seq] {
				t.Fatalf("reply seq %d bad or duplicate", rep.Seq)
			}
			seen[rep.Seq] = true
			e := entries[rep.Seq-1]
			if e.Process != w || e.Accepted != rep.Accepted || e.Reason != rep.Reason {
				t.Fatalf("reply %+v does not match entry %+v", rep, e)
			}
		}
	}
	accepted, rejected := 0, 0
	for _, e := range entries {
		ok, reason := Decide(e.Mode, e.Op, KeyState{e.PrevValue, e.PrevToken, e.PrevFence}, e.HasToken, e.Token)
		if ok != e.Accepted || reason != e.Reason {
			t.Fatalf("seq %d: logged %v %q, rule says %v %q", e.Seq, e.Accepted, e.Reason, ok, reason)
		}
		if e.Accepted {
			accepted++
		} else {
			rejected++
		}
	}
	if accepted == 0 || rejected == 0 {
		t.Errorf("workload did not exercise both outcomes: %d accepted, %d rejected", accepted, rejected)
	}
	assertReplays(t, entries, state)
}

// assertReplays fails unless replaying the apply log gives state: the log
// alone must be enough to rebuild the register after a crash.
func assertReplays(t *testing.T, entries []Entry, state map[string]KeyState) {
	t.Helper()
	replayed, err := Replay(entries)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(replayed, state) {
		t.Fatalf("replay %v != state %v", replayed, state)
	}
}

func TestClientErrorsDefiniteOrNot(t *testing.T) {
	ctx := context.Background()

	// Connection refused: nothing listens there any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	_, err = NewClient(dead, time.Second, "").Write(ctx, WriteRequest{Key: "k", Token: tok(1)})
	if err == nil || IsDefinite(err) {
		t.Errorf("refused: err %v, definite %v", err, IsDefinite(err))
	}

	// Timeout: the handler holds the request until the client gives up.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)
	_, err = NewClient(slow.URL, 50*time.Millisecond, "").Write(ctx, WriteRequest{Key: "k", Token: tok(1)})
	if err == nil || IsDefinite(err) || !strings.Contains(err.Error(), "register write") {
		t.Errorf("timeout: err %v, definite %v", err, IsDefinite(err))
	}

	// 5xx: the entry may be on disk.
	s5 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusServiceUnavailable, "apply log failed")
	}))
	defer s5.Close()
	_, err = NewClient(s5.URL, time.Second, "").Read(ctx, ReadRequest{Key: "k"})
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 503 || IsDefinite(err) || se.Message != "apply log failed" {
		t.Errorf("503: err %v", err)
	}
	if err := NewClient(s5.URL, time.Second, "").Healthy(ctx); err == nil {
		t.Error("Healthy on a 503 register = nil")
	}

	// A 200 that is not a reply: the op may have happened.
	junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html>")
	}))
	defer junk.Close()
	if _, err := NewClient(junk.URL, time.Second, "").Write(ctx, WriteRequest{Key: "k", Token: tok(1)}); err == nil || IsDefinite(err) {
		t.Errorf("junk: err %v", err)
	}

	// Cancelled context: unknown outcome, and the cause is visible.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = NewClient(slow.URL, time.Second, "").Write(cctx, WriteRequest{Key: "k", Token: tok(1)})
	if !errors.Is(err, context.Canceled) || IsDefinite(err) {
		t.Errorf("cancelled: err %v", err)
	}
}

func TestHealthy(t *testing.T) {
	r := start(t, logPath(t), ModeStrict)
	if err := r.c.Healthy(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Host:port without a scheme works too, as the controller has just that.
	if err := NewClient(r.addr, time.Second, "").Healthy(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestAppendFailureBreaksRegister makes the append fail (log file closed
// under the server) and checks that the state does not move, later work is
// refused, and Serve is told to stop, rather than answering without a
// ground truth.
func TestAppendFailureBreaksRegister(t *testing.T) {
	path := logPath(t)
	s := &server{mode: ModeOn, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), state: map[string]KeyState{}, fatal: make(chan error, 1)}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	s.log = f
	f.Close() // every append now fails
	if _, err := s.commit(op{kind: OpWrite, key: "k", value: 1, hasToken: true, token: 1}); !errors.Is(err, errUnavailable) {
		t.Fatalf("commit on broken log: %v", err)
	}
	if len(s.state) != 0 || s.seq != 0 {
		t.Fatalf("state changed although the append failed: %v seq %d", s.state, s.seq)
	}
	if _, err := s.commit(op{kind: OpRead, key: "k"}); !errors.Is(err, errUnavailable) {
		t.Fatalf("second commit: %v", err)
	}
	select {
	case <-s.fatal:
	default:
		t.Fatal("append failure not reported to Serve")
	}
}

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkWrite(b *testing.B) {
	r := start(b, filepath.Join(b.TempDir(), "apply.log"), ModeOn)
	ctx := context.Background()
	n := 0
	for b.Loop() {
		rep, err := r.c.Write(ctx, WriteRequest{Key: "k", Value: int64(n), Token: tok(1), Process: 1})
		if err != nil || !rep.Accepted {
			b.Fatalf("write: %+v %v", rep, err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "ops/s")
}
