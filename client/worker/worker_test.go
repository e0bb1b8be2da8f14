package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
)

const testSession = 2 * time.Second

func testRoot(t *testing.T) string {
	return "/test/" + strings.ReplaceAll(t.Name(), "/", "_")
}

func testConfig(t *testing.T, process int, root string) Config {
	return Config{ZK: []string{zkAddr}, Register: regURL, Process: process, SessionTimeout: testSession,
		Recipe: "seed", Token: "czxid", Root: root}
}

// startWorker runs the built-in worker (or, when it did not build, the
// test binary as a worker process) and kills its process group at the
// end of the test.
func startWorker(t *testing.T, cfg Config) *Proc {
	t.Helper()
	cmd := workerCommand(t, cfg)
	cmd.Env = append(cmd.Env, proc.Env(testRun, proc.Self())...)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	p := New(cmd, Options{Handler: newInbox(), Log: testlog.Writer(t), LogHead: 1 << 20, LogTail: 1 << 20})
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = proc.Resume(p.PID(), time.Second)
		_ = p.Kill()
		<-p.Done()
	})
	return p
}

// workerCommand is the command of a worker of cfg: the built-in worker
// started as a run starts it (subjects.Command), or the test binary.
func workerCommand(t *testing.T, cfg Config) *exec.Cmd {
	t.Helper()
	if chaosExe == "" {
		js, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWorker+"="+string(js))
		return cmd
	}
	prog, args, err := subjects.Command(chaosExe, cfg.Recipe, subjects.Flags{ZK: strings.Join(cfg.ZK, ","), Register: cfg.Register,
		Process: cfg.Process, SessionTimeout: cfg.SessionTimeout, Token: cfg.Token, Root: cfg.Root, Workload: cfg.Workload})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prog, args...)
	cmd.Env = os.Environ()
	return cmd
}

func do(t *testing.T, p *Proc, req Request) Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := p.Do(ctx, req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.F, req.Key, err)
	}
	if m.ID != req.ID && req.ID != 0 {
		t.Fatalf("response id %d for request %d", m.ID, req.ID)
	}
	return m
}

func expect(t *testing.T, m Message, typ, errSub string) {
	t.Helper()
	if m.Type != typ || !strings.Contains(m.Error, errSub) {
		t.Fatalf("got %+v, want type %s with error containing %q", m, typ, errSub)
	}
}

func val(v int64) *int64 { return &v }

func observer(t *testing.T) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{zkAddr}, testSession, zk.WithLogger(zkLog{t}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

type zkLog struct{ t *testing.T }

func (l zkLog) Printf(string, ...any) {}

func children(t *testing.T, c *zk.Conn, dir string) []string {
	t.Helper()
	ch, _, err := c.Children(dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("children %s: %v", dir, err)
	}
	return ch
}

func TestProtocol(t *testing.T) {
	needZK(t)
	root := testRoot(t)
	obs := observer(t)
	p := startWorker(t, testConfig(t, 0, root))
	h := p.Hello()
	if h.PID != p.PID() || !strings.HasPrefix(h.Session, "0x") || h.Session == "0x0" || h.Protocol != Protocol {
		t.Fatalf("hello %+v, pid %d", h, p.PID())
	}

	acq := do(t, p, Request{F: "acquire", Key: "k", TimeoutMS: 5000})
	expect(t, acq, OK, "")
	if acq.Token == nil || !strings.HasPrefix(acq.Node, root+"/k/_c_") || acq.Key != "k" {
		t.Fatalf("acquire: %+v", acq)
	}
	w := do(t, p, Request{F: "write", Key: "k", Value: val(5)})
	expect(t, w, OK, "")
	if w.Accepted == nil || !*w.Accepted || *w.Token != *acq.Token || *w.Value != 5 {
		t.Fatalf("write: %+v", w)
	}
	r := do(t, p, Request{F: "read", Key: "k"})
	expect(t, r, OK, "")
	if r.Accepted == nil || !*r.Accepted || *r.Token != *acq.Token || *r.Value != 5 {
		t.Fatalf("read: %+v", r)
	}
	rel := do(t, p, Request{F: "release", Key: "k"})
	expect(t, rel, OK, "")
	if rel.Node != acq.Node {
		t.Fatalf("release: %+v", rel)
	}
	expect(t, do(t, p, Request{F: "read", Key: "k"}), Fail, "not holding k")
	expect(t, do(t, p, Request{F: "write", Key: "k", Value: val(6)}), Fail, "not holding k")
	expect(t, do(t, p, Request{F: "release", Key: "k"}), Fail, "not held")
	expect(t, do(t, p, Request{F: "frobnicate", Key: "k"}), Fail, `unknown f "frobnicate"`)
	expect(t, do(t, p, Request{F: "acquire", Key: "k"}), Fail, "timeout_ms")

	// On stdin EOF the worker releases, closes its session and exits 0.
	expect(t, do(t, p, Request{F: "acquire", Key: "k", TimeoutMS: 5000}), OK, "")
	if len(children(t, obs, root+"/k")) != 1 {
		t.Fatal("no lock node while held")
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("worker did not exit after stdin EOF")
	}
	if err := p.Err(); err != nil {
		t.Fatalf("worker exit: %v", err)
	}
	if q := children(t, obs, root+"/k"); len(q) != 0 {
		t.Fatalf("lock nodes left after exit: %v", q)
	}
	if _, err := p.Do(context.Background(), Request{F: "read", Key: "k"}); !errors.Is(err, ErrExited) {
		t.Fatalf("Do after exit: %v", err)
	}
}

func TestAcquireTimeout(t *testing.T) {
	needZK(t)
	root := testRoot(t)
	obs := observer(t)
	a, b := startWorker(t, testConfig(t, 0, root)), startWorker(t, testConfig(t, 1, root))
	expect(t, do(t, a, Request{F: "acquire", Key: "k", TimeoutMS: 5000}), OK, "")
	expect(t, do(t, b, Request{F: "acquire", Key: "k", TimeoutMS: 300}), Fail, "timeout")
	if q := children(t, obs, root+"/k"); len(q) != 1 {
		t.Fatalf("queue after timeout: %v", q)
	}
}

// TestMalformedLines runs Run in-process so the test can write raw bytes.
func TestMalformedLines(t *testing.T) {
	needZK(t)
	cfg := testConfig(t, 0, testRoot(t))
	cfg.Logger = testlog.Logger(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), cfg, inR, outW)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	next := func() Message {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("worker output ended: %v", lines.Err())
		}
		var m Message
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("worker wrote %q: %v", lines.Text(), err)
		}
		return m
	}
	if m := next(); m.Event != EventHello {
		t.Fatalf("first line %+v", m)
	}
	for _, c := range []struct {
		line string
		id   int64
		err  string
	}{
		{`{"id":7,"f":`, 0, "malformed request"},
		{`{"id":8,"f":"read","key":3}`, 8, "malformed request"},
		{`not json at all`, 0, "malformed request"},
		{`{"id":9,"f":"nope","key":"k"}`, 9, `unknown f "nope"`},
		{`{"id":10,"f":"read"}`, 10, "missing key"},
	} {
		if _, err := io.WriteString(inW, c.line+"\n"); err != nil {
			t.Fatal(err)
		}
		m := next()
		if m.Type != Fail || m.ID != c.id || !strings.Contains(m.Error, c.err) {
			t.Fatalf("line %s: got %+v", c.line, m)
		}
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after EOF")
	}
}

// TestLateResponse: a Do that gives up gets ctx.Err(); the answer that
// comes later goes to the handler's Late with the request it answers. A
// Do pending when the process dies returns ErrExited promptly.
func TestLateResponse(t *testing.T) {
	needZK(t)
	p := startWorker(t, testConfig(t, 0, testRoot(t)))
	if err := proc.Pause(p.PID(), time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := p.Do(ctx, Request{F: "read", Key: "k"})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do on a stopped worker: %v", err)
	}
	if err := proc.Resume(p.PID(), time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-inboxOf(p).late:
		if l.m.Event != "" || l.m.ID == 0 || l.m.ID != l.req.ID || l.m.Type != Fail || l.req.F != "read" || l.req.Key != "k" {
			t.Fatalf("late response: %+v to %+v", l.m, l.req)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("late response not handed to Late")
	}

	if err := proc.Pause(p.PID(), time.Second); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.Do(context.Background(), Request{F: "read", Key: "k"})
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrExited) {
			t.Fatalf("Do when the worker died: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Do did not return after the worker died")
	}
}

// TestStaleHolderAfterPause is the GC-pause scenario: the holder is
// stopped past its session timeout, another worker takes the lock and
// writes, and the stopped one resumes with a write already waiting in its
// stdin. The recipe must report the loss; the stale write either never
// leaves (Held already false) or is fenced off by the register.
func TestStaleHolderAfterPause(t *testing.T) {
	needZK(t)
	root := testRoot(t)
	obs := observer(t)
	a, b := startWorker(t, testConfig(t, 0, root)), startWorker(t, testConfig(t, 1, root))
	ga := do(t, a, Request{F: "acquire", Key: "k", TimeoutMS: 5000})
	expect(t, ga, OK, "")
	expect(t, do(t, a, Request{F: "write", Key: "k", Value: val(1)}), OK, "")

	if err := proc.Pause(a.PID(), time.Second); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	gb := do(t, b, Request{F: "acquire", Key: "k", TimeoutMS: 15000})
	expect(t, gb, OK, "")
	t.Logf("MEASURE b acquired %s after a was stopped (session timeout %s)", time.Since(paused).Round(time.Millisecond), testSession)
	if *gb.Token <= *ga.Token {
		t.Fatalf("tokens %d then %d", *ga.Token, *gb.Token)
	}
	expect(t, do(t, b, Request{F: "write", Key: "k", Value: val(2)}), OK, "")
	if q := children(t, obs, root+"/k"); len(q) != 1 || root+"/k/"+q[0] != gb.Node {
		t.Fatalf("queue %v, want only b's %s", q, gb.Node)
	}

	type reply struct {
		m   Message
		err error
		at  time.Time
	}
	staleRes := make(chan reply, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m, err := a.Do(ctx, Request{F: "write", Key: "k", Value: val(99)})
		staleRes <- reply{m, err, time.Now()}
	}()
	time.Sleep(100 * time.Millisecond) // the request sits in a's stdin
	if err := proc.Resume(a.PID(), time.Second); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	r := <-staleRes
	if r.err != nil {
		t.Fatal(r.err)
	}
	switch {
	case r.m.Type == Fail && r.m.Accepted != nil && !*r.m.Accepted:
		if *r.m.CurrentToken != *gb.Token {
			t.Fatalf("stale write rejected with current token %d, want %d", *r.m.CurrentToken, *gb.Token)
		}
		t.Logf("MEASURE stale write reached the register and was fenced off, %s after SIGCONT", r.at.Sub(resumed).Round(time.Microsecond))
	case r.m.Type == Fail && strings.Contains(r.m.Error, "not holding"):
		t.Logf("MEASURE stale write stopped by Held, %s after SIGCONT", r.at.Sub(resumed).Round(time.Microsecond))
	default:
		t.Fatalf("stale write answered %+v", r.m)
	}

	var sawExpired, sawLost bool
	timeout := time.After(10 * time.Second)
	for !sawExpired || !sawLost {
		select {
		case m := <-inboxOf(a).events:
			t.Logf("a event %+v at +%s", m, time.Since(resumed).Round(time.Millisecond))
			switch {
			case m.Event == EventSession && m.State == StateExpired:
				sawExpired = true
			case m.Event == EventLost:
				if m.Key != "k" || *m.Token != *ga.Token || m.Node != ga.Node || m.State != StateExpired {
					t.Fatalf("lost event %+v for grant %+v", m, ga)
				}
				sawLost = true
			}
		case <-timeout:
			t.Fatalf("after SIGCONT: expired %v, lost %v", sawExpired, sawLost)
		}
	}
	expect(t, do(t, a, Request{F: "read", Key: "k"}), Fail, "not holding k")
	expect(t, do(t, a, Request{F: "release", Key: "k"}), Fail, "revoked")
	rb := do(t, b, Request{F: "read", Key: "k"})
	if rb.Type != OK || *rb.Value != 2 {
		t.Fatalf("b reads %+v, want 2", rb)
	}
}
