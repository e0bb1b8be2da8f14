package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/resource/register"
)

// subject is one worker implementation under test.
type subject struct {
	name string // in test names
	spec string // the --recipe value
}

var (
	seed    = subject{"seed", "seed"}
	curator = subject{"curator", subjects.Curator}
	// kazoo is kazoo's Lock recipe, the Python subject (lock only).
	kazoo = subject{"kazoo", subjects.Kazoo}
	// conformant are the workers every answer of the protocol is checked
	// against: the Go reference and the workers not written in Go.
	conformant = []subject{seed, curator, kazoo}
	// curatorSelector is Curator's LeaderSelector, an election worker only.
	curatorSelector = subject{"curator-selector", subjects.CuratorSelector}
	// pyElection is an election worker written in Python (kazoo) from
	// docs/worker-protocol.md alone: the proof that a third party can.
	pyElection = subject{"python-kazoo", "exec:" + pythonExe + " " + pyElectionWorker}
	// candidates are the workers the election's answers are checked
	// against: the conformant ones, LeaderSelector and the Python worker.
	candidates = []subject{seed, curator, curatorSelector, pyElection}
)

// pythonExe is Debian's interpreter, where python3-kazoo is installed
// (scripts/install-deps.sh); not the python3 first on PATH.
const pythonExe = "/usr/bin/python3"

// pyElectionWorker is the Python worker's absolute path (go test runs in
// the package's folder).
var pyElectionWorker = func() string {
	p, err := filepath.Abs(filepath.Join("testdata", "election_worker.py"))
	if err != nil {
		panic(err)
	}
	return p
}()

// skipUnavailable skips a subject whose runtime is not installed here,
// saying what is missing; the Go and Java subjects are never skipped (the
// package's TestMain needs Java anyway), the Python ones without kazoo.
func skipUnavailable(t *testing.T, sub subject) {
	t.Helper()
	if sub != pyElection && sub != kazoo {
		return
	}
	if out, err := exec.Command(pythonExe, "-c", "import kazoo").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import kazoo (apt-get install python3-kazoo, or run scripts/install-deps.sh): %v: %s",
			pythonExe, err, strings.TrimSpace(string(out)))
	}
}

// forEach runs f as a subtest per subject.
func forEach(t *testing.T, subs []subject, f func(t *testing.T, sub subject)) {
	needEnv(t)
	for _, sub := range subs {
		t.Run(sub.name, func(t *testing.T) {
			skipUnavailable(t, sub)
			f(t, sub)
		})
	}
}

// keyOf is a lock and register key of the test's own: the register is
// shared by every test of the package.
func keyOf(t *testing.T) string {
	return strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
}

// rootOf is the test's own lock root.
func rootOf(t *testing.T) string { return "/conformance/" + keyOf(t) }

var processSeq atomic.Int64

// wproc is one worker process; every line it writes is kept, in the order
// it wrote them, so a test can check the order as well as the content.
type wproc struct {
	t      *testing.T
	sub    subject
	n      int
	cmd    *exec.Cmd
	host   *netns.Host
	stdin  io.WriteCloser
	stderr string
	nextID int64

	mu    sync.Mutex
	lines []worker.Message
	grew  chan struct{} // closed and replaced when lines grows or stdout ends
	eof   bool
	done  chan struct{}
	err   error
}

// start starts n lock workers of sub at once (JVMs start slowly), with
// sessions that no test expects to expire, and waits for each one's
// hello, which must be its first line.
func start(t *testing.T, sub subject, root string, n int) []*wproc {
	t.Helper()
	return startFor(t, sub, "", root, n, steadySession)
}

// startFor is start for a workload's workers ("" is the lock workload)
// with the session timeout given.
func startFor(t *testing.T, sub subject, workload, root string, n int, session time.Duration) []*wproc {
	t.Helper()
	ws := make([]*wproc, n)
	for i := range ws {
		ws[i] = launch(t, sub, workload, root, session)
	}
	for _, w := range ws {
		i, h := w.await(30*time.Second, 0, func(m worker.Message) bool { return m.Event != "" || m.ID != 0 })
		if i != 0 || h.Event != worker.EventHello || h.PID != w.cmd.Process.Pid || !strings.HasPrefix(h.Session, "0x") {
			t.Fatalf("%s: first line %+v, want hello with pid %d and a session", w, h, w.cmd.Process.Pid)
		}
	}
	return ws
}

// launch starts one worker process as the controller would: the command
// of subjects.Command, in a namespace of its own in netns mode.
func launch(t *testing.T, sub subject, workload, root string, session time.Duration) *wproc {
	t.Helper()
	n := int(processSeq.Add(1))
	w := &wproc{t: t, sub: sub, n: n, grew: make(chan struct{}), done: make(chan struct{}),
		stderr: filepath.Join(env.dir, fmt.Sprintf("w%d-%s.log", n, sub.name))}
	prog, args, err := subjects.Command(env.chaos, sub.spec, subjects.Flags{ZK: env.zk, Register: env.reg, Process: n,
		SessionTimeout: session, Token: "czxid", Root: root, Workload: workload})
	if err != nil {
		t.Fatalf("command for %s: %v", sub.name, err)
	}
	if env.net != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if w.host, err = env.net.AddHost(ctx, fmt.Sprintf("w%d", n)); err != nil {
			t.Fatalf("namespace for %s: %v", w, err)
		}
		w.cmd = w.host.Command(context.Background(), prog, args...)
	} else {
		w.cmd = exec.Command(prog, args...)
	}
	w.cmd.Env = append(os.Environ(), proc.Env(env.runID, proc.Self())...)
	w.cmd.Env = append(w.cmd.Env, register.SecretEnv+"="+regSecret)
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(w.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	w.cmd.Stderr = logf
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", w, err)
	}
	go w.read(stdout)
	t.Cleanup(w.cleanup)
	return w
}

func (w *wproc) String() string { return fmt.Sprintf("%s worker p%d", w.sub.name, w.n) }

// read keeps every stdout line; a line that is not a protocol message is
// a test failure (stdout is the protocol's alone), kept as an error line.
func (w *wproc) read(stdout io.Reader) {
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var m worker.Message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				m = worker.Message{Error: fmt.Sprintf("UNPARSABLE LINE %q: %v", line, jerr)}
			}
			w.mu.Lock()
			w.lines = append(w.lines, m)
			close(w.grew)
			w.grew = make(chan struct{})
			w.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	werr := w.cmd.Wait()
	w.mu.Lock()
	w.eof, w.err = true, werr
	close(w.grew)
	w.grew = make(chan struct{})
	w.mu.Unlock()
	close(w.done)
}

// cleanup kills what is left of the worker, removes its namespace, shows
// its log if the test failed, and checks that every state it reported is
// one the protocol names.
func (w *wproc) cleanup() {
	if w.cmd.Process != nil {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-w.done
	}
	if w.host != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := env.net.RemoveHost(ctx, w.host); err != nil {
			w.t.Errorf("remove namespace of %s: %v", w, err)
		}
	}
	for _, m := range w.snapshot() {
		w.checkLine(m)
	}
	if w.t.Failed() {
		b, _ := os.ReadFile(w.stderr)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		w.t.Logf("%s stderr (last %d lines):\n%s", w, min(len(lines), 40), strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}

// sessionStates are the session event states of the protocol.
var sessionStates = []string{worker.StateConnected, worker.StateDisconnected, worker.StateExpired, worker.StateClosed}

func (w *wproc) checkLine(m worker.Message) {
	switch {
	case strings.HasPrefix(m.Error, "UNPARSABLE"):
		w.t.Errorf("%s wrote to stdout: %s", w, m.Error)
	case m.Event == worker.EventLost && !slices.Contains(worker.LostReasons, m.State):
		w.t.Errorf("%s: lost event with state %q, not one of the documented %v: %+v", w, m.State, worker.LostReasons, m)
	case m.Event == worker.EventLost && (m.Key == "" || m.Node == "" || m.Token == nil):
		w.t.Errorf("%s: lost event without key, node or token: %+v", w, m)
	case m.Event == worker.EventSession && !slices.Contains(sessionStates, m.State):
		w.t.Errorf("%s: session event with state %q, not one of %v", w, m.State, sessionStates)
	}
}

func (w *wproc) snapshot() []worker.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lines)
}

// send writes one request with a fresh id and returns the id.
func (w *wproc) send(req worker.Request) int64 {
	w.t.Helper()
	w.nextID++
	req.ID = w.nextID
	b, err := json.Marshal(req)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.stdin.Write(append(b, '\n')); err != nil {
		w.t.Fatalf("write to %s: %v", w, err)
	}
	return req.ID
}

// await returns the first line at or after index from that matches, with
// its index; the test fails if none comes within d.
func (w *wproc) await(d time.Duration, from int, match func(worker.Message) bool) (int, worker.Message) {
	w.t.Helper()
	if i, m, ok := w.find(d, from, match); ok {
		return i, m
	}
	w.t.Fatalf("%s: no matching line within %s; it wrote:\n%s", w, d, w.dump())
	return 0, worker.Message{}
}

// find is await without failing.
func (w *wproc) find(d time.Duration, from int, match func(worker.Message) bool) (int, worker.Message, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		for i := from; i < len(w.lines); i++ {
			if match(w.lines[i]) {
				m := w.lines[i]
				w.mu.Unlock()
				return i, m, true
			}
		}
		grew, eof := w.grew, w.eof
		w.mu.Unlock()
		if eof {
			return 0, worker.Message{}, false
		}
		select {
		case <-grew:
		case <-deadline.C:
			return 0, worker.Message{}, false
		}
	}
}

func (w *wproc) dump() string {
	var b strings.Builder
	for i, m := range w.snapshot() {
		js, _ := json.Marshal(m)
		fmt.Fprintf(&b, "  %3d %s\n", i, js)
	}
	return b.String()
}

func answerTo(id int64) func(worker.Message) bool {
	return func(m worker.Message) bool { return m.Event == "" && m.ID == id }
}

// do sends req and waits up to d for its answer.
func (w *wproc) do(req worker.Request, d time.Duration) worker.Message {
	w.t.Helper()
	_, m := w.await(d, 0, answerTo(w.send(req)))
	return m
}

// closeInput closes the worker's stdin, the protocol's "finish".
func (w *wproc) closeInput() {
	w.t.Helper()
	if err := w.stdin.Close(); err != nil {
		w.t.Fatalf("close stdin of %s: %v", w, err)
	}
}

// waitExit waits for the process to exit and returns its exit error.
func (w *wproc) waitExit(d time.Duration) error {
	w.t.Helper()
	select {
	case <-w.done:
		return w.err
	case <-time.After(d):
		w.t.Fatalf("%s did not exit within %s", w, d)
		return nil
	}
}

func acquire(key string, timeout time.Duration) worker.Request {
	return worker.Request{F: "acquire", Key: key, TimeoutMS: timeout.Milliseconds()}
}

func release(key string) worker.Request { return worker.Request{F: "release", Key: key} }

// expect fails unless m is an answer of type typ (and an ok carries a
// token when it answers an acquire).
func expect(t *testing.T, what string, m worker.Message, typ string) {
	t.Helper()
	if m.Type != typ {
		js, _ := json.Marshal(m)
		t.Fatalf("%s: answered %s, want %s", what, js, typ)
	}
}

func tok(t *testing.T, m worker.Message) int64 {
	t.Helper()
	if m.Token == nil {
		t.Fatalf("answer without a token: %+v", m)
	}
	return *m.Token
}

// observer is a plain client from the test process (root namespace), for
// looking at the queue and watching nodes from the servers' side.
func observer(t *testing.T) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{env.zk}, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func children(t *testing.T, c *zk.Conn, dir string) []string {
	t.Helper()
	ch, _, err := c.Children(dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("children %s: %v", dir, err)
	}
	return ch
}

// awaitQueue waits until dir holds n nodes.
func awaitQueue(t *testing.T, c *zk.Conn, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		q := children(t, c, dir)
		if len(q) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s: %d nodes %v, want %d", dir, len(q), q, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
