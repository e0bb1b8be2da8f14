package runner

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/fakeworker"
	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
	"github.com/zkchaos/zkchaos/workloads"
)

// The fleet against real worker processes: the test binary re-executed
// as a scripted fake worker (internal/testkit/fakeworker) through the exec:
// subject, so spawn, pipes, retirement and shutdown are the real ones;
// only ZooKeeper and the register are left out.

// testFleet is a fleet of fake workers recording into rec.
type testFleet struct {
	*fleet
	run *store.Run

	mu    sync.Mutex
	fails []error
}

func newTestFleet(t *testing.T, s fakeworker.Script, rec history.Recorder, mod func(*Config)) *testFleet {
	t.Helper()
	cfg := Defaults()
	cfg.Workers = 1
	cfg.Recipe = "exec:" + os.Args[0]
	cfg.OpTimeout = 5 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	run, err := store.Create(t.TempDir(), "fleet", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tf := &testFleet{run: run}
	tf.fleet = newFleet(cfg, "", []string{fakeworker.Env + "=" + s.Encode()}, "127.0.0.1:2181", "http://127.0.0.1:1",
		placement{}, run, rec, testlog.Logger(t), context.Background(), func(err error) {
			tf.mu.Lock()
			tf.fails = append(tf.fails, err)
			tf.mu.Unlock()
		})
	// Not shutdown: the cleanup must work even when shutdown does not.
	t.Cleanup(func() {
		tf.fleet.mu.Lock()
		all := append([]*live(nil), tf.all...)
		tf.fleet.mu.Unlock()
		for _, l := range all {
			_ = l.p.Kill()
			<-l.p.Done()
		}
	})
	return tf
}

// start gives slot i a live worker, as its loop would.
func (tf *testFleet) start(t *testing.T, i int) *slot {
	t.Helper()
	s := tf.slots[i]
	l, err := tf.spawn(context.Background(), s.process)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.cur = l
	s.mu.Unlock()
	return s
}

func (tf *testFleet) failures() []error {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	return append([]error(nil), tf.fails...)
}

func acquire(key string) workloads.Op {
	return workloads.Op{F: history.FAcquire, Key: key, Timeout: time.Second}
}

func release(key string) workloads.Op { return workloads.Op{F: history.FRelease, Key: key} }

func mustOK(t *testing.T, r workloads.Result) workloads.Result {
	t.Helper()
	if r.Type != history.OK {
		t.Fatalf("result %+v", r)
	}
	return r
}

func waitExit(t *testing.T, l *live, why string) {
	t.Helper()
	select {
	case <-l.p.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("worker process %d still running 10s after %s", l.process, why)
	}
}

// TestLinesRecordedInWorkerOrder: the worker writes a lost event and then
// the release answer, in one write, 300 times. The history must have the
// lost (invoke and ok) between the release's invocation and its
// completion every time; with events and responses on separate paths the
// release ok was recorded first in most of them.
func TestLinesRecordedInWorkerOrder(t *testing.T) {
	mem := history.NewMemory()
	tf := newTestFleet(t, fakeworker.Script{LostBeforeRelease: true}, mem, nil)
	s := tf.start(t, 0)
	const n = 300
	for i := 0; i < n; i++ {
		mustOK(t, s.Do(context.Background(), acquire("SKU-1")))
		mustOK(t, s.Do(context.Background(), release("SKU-1")))
	}
	var inRelease, lostSeen bool
	wrong := 0
	for _, e := range mem.Events() {
		switch {
		case e.F == history.FRelease && e.Type == history.Invoke:
			inRelease, lostSeen = true, false
		case e.F == history.FLost && e.Type == history.OK && inRelease:
			lostSeen = true
		case e.F == history.FRelease:
			if !lostSeen {
				wrong++
			}
			inRelease = false
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d release completions recorded before the lost event the worker wrote before them", wrong, n)
	}
}

// slowInfo is a Memory whose info completions take a while to record,
// which widens the window between giving up on a request and recording
// that: a late answer arriving in it must still come after the info and
// name the operation it answers.
type slowInfo struct {
	*history.Memory
	delay time.Duration
}

func (s slowInfo) Append(e history.Event) (history.Event, error) {
	if e.Type == history.Info {
		time.Sleep(s.delay)
	}
	return s.Memory.Append(e)
}

// TestLateAnswer: an acquire answered after its timeout is recorded info,
// the process is retired (a fresh process id takes the slot), the late
// answer is recorded after the info as `late` of that acquire and key,
// and the retired worker, its answer given, gets its stdin closed and
// exits rather than holding the lock until teardown.
func TestLateAnswer(t *testing.T) {
	mem := history.NewMemory()
	tf := newTestFleet(t, fakeworker.Script{DelayMS: map[string]int64{"acquire": 250}, DelayOnce: true},
		slowInfo{mem, 300 * time.Millisecond}, func(c *Config) { c.OpTimeout = 100 * time.Millisecond })
	s := tf.start(t, 0)
	old := s.cur
	op := acquire("SKU-2")
	op.Timeout = 0 // the Do's deadline is the op timeout alone
	if r := s.Do(context.Background(), op); r.Type != history.Info || r.Error != "timeout" {
		t.Fatalf("acquire past its timeout: %+v", r)
	}
	if s.cur != nil || s.process != 1 {
		t.Fatalf("after info: slot process %d, live %v; want retired, next process 1", s.process, s.cur)
	}
	waitExit(t, old, "its late answer")
	var info, late *history.Event
	for _, e := range mem.Events() {
		switch {
		case e.F == history.FAcquire && e.Type == history.Info:
			info = &e
		case e.F == history.FLate && e.Type == history.OK:
			late = &e
		}
	}
	switch {
	case info == nil || late == nil:
		t.Fatalf("history has info %v and late %v", info, late)
	case late.Index < info.Index:
		t.Fatalf("late answer recorded at %d, before the info completion it answers (%d)", late.Index, info.Index)
	case late.Value.Of != history.FAcquire || late.Key != "SKU-2" || late.Value.State != "ok" || late.Process != 0:
		t.Fatalf("late answer recorded as %+v %+v, want of acquire, key SKU-2, ok, process 0", *late, *late.Value)
	}
}

// TestRetireClosesInput: a process retired with nothing pending gets its
// stdin closed at once and exits; the slot's next process is fresh.
func TestRetireClosesInput(t *testing.T) {
	tf := newTestFleet(t, fakeworker.Script{}, history.NewMemory(), func(c *Config) { c.Workers = 2 })
	s := tf.start(t, 1)
	l := s.cur
	mustOK(t, s.Do(context.Background(), acquire("SKU-1")))
	s.retire()
	waitExit(t, l, "its retirement with nothing pending")
	if s.process != 3 || s.cur != nil {
		t.Fatalf("slot after retire: process %d, live %v; want process 3 and none", s.process, s.cur)
	}
	if r := s.Do(context.Background(), acquire("SKU-1")); r.Type != history.Fail {
		t.Fatalf("Do on a slot without a process: %+v", r)
	}
}

// TestExitedProcessLeaves: an exited process leaves the fleet's list (a
// soak starts hundreds, and each kept its handles for the rest of the
// run), while what it last reported of its session stays readable for a
// fault still verifying it; only the last maxExited are kept.
func TestExitedProcessLeaves(t *testing.T) {
	tf := newTestFleet(t, fakeworker.Script{}, history.NewMemory(), func(c *Config) { c.Workers = 2 })
	s := tf.start(t, 1)
	l := s.cur
	l.mu.Lock()
	sess, pid := l.session, l.p.PID()
	l.mu.Unlock()
	s.retire()
	waitExit(t, l, "its retirement")
	deadline := time.Now().Add(5 * time.Second)
	for {
		tf.mu.Lock()
		n := len(tf.all)
		tf.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fleet still lists %d processes after the only one exited", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := tf.SessionState(pid, sess); got != worker.StateConnected {
		t.Fatalf("SessionState of the exited process = %q, want %q", got, worker.StateConnected)
	}
	for i := range maxExited + 5 {
		tf.exit(&live{p: l.p, states: map[int64]string{int64(i): "x"}})
	}
	tf.mu.Lock()
	n, first := len(tf.exited), tf.exited[0].states
	tf.mu.Unlock()
	if n != maxExited || first[5] != "x" {
		t.Fatalf("exited keeps %d (first %v), want the last %d", n, first, maxExited)
	}
}

// TestHolderView: the nemesis sees a holder from the workload's phase,
// loses it when the worker reports the lock lost (before the release
// answer that follows in the same write), and never sees a retired one.
func TestHolderView(t *testing.T) {
	tf := newTestFleet(t, fakeworker.Script{LostBeforeRelease: true}, history.NewMemory(), nil)
	s := tf.start(t, 0)
	if hs := tf.Holders(); len(hs) != 0 {
		t.Fatalf("holders before any acquire: %+v", hs)
	}
	acq := mustOK(t, s.Do(context.Background(), acquire("SKU-3")))
	s.SetPhase(workloads.Critical, "SKU-3", *acq.Value.Token)
	hs := tf.Holders()
	if len(hs) != 1 || hs[0].Key != "SKU-3" || hs[0].Token != *acq.Value.Token || !hs[0].InCriticalSection || hs[0].PID != s.cur.p.PID() {
		t.Fatalf("holders in the critical section: %+v", hs)
	}
	ws := tf.Workers()
	if len(ws) != 1 || !ws[0].Holding || !ws[0].InCriticalSection || ws[0].Session != 1 || ws[0].PID != s.cur.p.PID() {
		t.Fatalf("workers in the critical section: %+v", ws)
	}
	if st := tf.SessionState(s.cur.p.PID(), 1); st != "connected" {
		t.Fatalf("session state from hello: %q", st)
	}
	s.SetPhase(workloads.Holding, "SKU-3", *acq.Value.Token)
	if ws := tf.Workers(); ws[0].Holding {
		t.Fatalf("a holder whose write is over is still a client-fault target: %+v", ws[0])
	}
	// A leader's next task is a new critical window: a target again.
	s.SetPhase(workloads.Critical, "SKU-3", *acq.Value.Token)
	if ws := tf.Workers(); !ws[0].Holding || !ws[0].InCriticalSection {
		t.Fatalf("a second critical window of the same holding is no target: %+v", ws[0])
	}
	s.SetPhase(workloads.Holding, "SKU-3", *acq.Value.Token)
	// The lost event comes before the release answer: by the time Do
	// returns, the view was cleared by the event, not by the workload.
	mustOK(t, s.Do(context.Background(), release("SKU-3")))
	if hs := tf.Holders(); len(hs) != 0 {
		t.Fatalf("holders after the worker reported the lock lost: %+v", hs)
	}
	acq = mustOK(t, s.Do(context.Background(), acquire("SKU-3")))
	s.SetPhase(workloads.Holding, "SKU-3", *acq.Value.Token)
	s.retire()
	if hs := tf.Holders(); len(hs) != 0 {
		t.Fatalf("holders after retirement: %+v", hs)
	}
	if ws := tf.Workers(); len(ws) != 0 {
		t.Fatalf("workers after retirement: %+v", ws)
	}
}

// TestShutdown: every worker gets its input closed; one that exits on it
// exits cleanly, those that ignore it are all killed once the grace is
// over (the grace is one deadline for all, not one per worker).
func TestShutdown(t *testing.T) {
	polite := newTestFleet(t, fakeworker.Script{}, history.NewMemory(), nil)
	stubborn := newTestFleet(t, fakeworker.Script{IgnoreEOF: true}, history.NewMemory(), func(c *Config) { c.Workers = 3 })
	p := polite.start(t, 0).cur
	var ss []*live
	for i := range 3 {
		ss = append(ss, stubborn.start(t, i).cur)
	}
	polite.shutdown(5 * time.Second)
	done := make(chan struct{})
	go func() {
		stubborn.shutdown(300 * time.Millisecond)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown with a 300ms grace still waiting after 10s for workers that ignore EOF")
	}
	for _, l := range append(ss, p) {
		select {
		case <-l.p.Done():
		default:
			t.Fatalf("worker pid %d still running after shutdown", l.p.PID())
		}
	}
	if err := p.p.Err(); err != nil {
		t.Errorf("polite worker: %v, want a clean exit on EOF", err)
	}
	for _, l := range ss {
		if err := l.p.Err(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("stubborn worker: %v, want killed", err)
		}
	}
}

// TestProtocolErrorRetires: a stdout line over the limit fails the
// pending request as info naming the breach, and the process is retired.
func TestProtocolErrorRetires(t *testing.T) {
	mem := history.NewMemory()
	tf := newTestFleet(t, fakeworker.Script{LongLine: 1 << 20}, mem, nil)
	s := tf.start(t, 0)
	l := s.cur
	r := s.Do(context.Background(), acquire("SKU-1"))
	if r.Type != history.Info || !strings.Contains(r.Error, "broke the protocol") || !strings.Contains(r.Error, "1048577 bytes") {
		t.Fatalf("acquire from a worker that wrote a 1 MiB line: %+v", r)
	}
	if s.cur != nil {
		t.Fatal("process not retired after a protocol error")
	}
	waitExit(t, l, "its retirement")
	evs := mem.Events()
	found := false
	for _, e := range evs {
		found = found || (e.F == history.FAcquire && e.Type == history.Info && strings.Contains(e.Error, "broke the protocol"))
	}
	if !found {
		t.Fatalf("no info completion naming the protocol error in %+v", evs)
	}
}

// TestWorkerLogCapped: the run's cap applies to each worker's log file.
func TestWorkerLogCapped(t *testing.T) {
	tf := newTestFleet(t, fakeworker.Script{StderrFlood: 4 << 20}, history.NewMemory(), func(c *Config) {
		c.WorkerLogHead, c.WorkerLogTail = 8<<10, 8<<10
	})
	s := tf.start(t, 0)
	l := s.cur
	mustOK(t, s.Do(context.Background(), acquire("SKU-1")))
	s.retire()
	waitExit(t, l, "retirement")
	b, err := os.ReadFile(tf.run.WorkerLog(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 16<<10+300 {
		t.Fatalf("worker log %d bytes, cap 16 KiB", len(b))
	}
	if !regexp.MustCompile(`\[zkchaos: log capped at 8192 head \+ 8192 tail bytes: \d+ bytes \(\d+ lines\) dropped here`).Match(b) {
		t.Fatalf("no note of the dropped part in the log:\n%.300s", b)
	}
}

// TestUnwritableFolderFails: a history append or a worker log write that
// fails is reported to the controller as a results-folder failure.
func TestUnwritableFolderFails(t *testing.T) {
	mem := history.NewMemory()
	mem.Err = errors.New("no space left on device")
	tf := newTestFleet(t, fakeworker.Script{}, mem, nil)
	s := tf.start(t, 0)
	s.Do(context.Background(), acquire("SKU-1"))
	fails := tf.failures()
	if len(fails) == 0 || !strings.Contains(fails[0].Error(), "results folder: record history: no space left on device") {
		t.Fatalf("failures %v", fails)
	}

	tf = newTestFleet(t, fakeworker.Script{StderrFlood: 1 << 10}, history.NewMemory(), nil)
	if err := os.Symlink("/dev/full", tf.run.WorkerLog(0)); err != nil {
		t.Fatal(err)
	}
	tf.start(t, 0)
	deadline := time.Now().Add(10 * time.Second)
	for len(tf.failures()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	fails = tf.failures()
	if len(fails) == 0 || !strings.Contains(fails[0].Error(), "results folder: worker log") || !strings.Contains(fails[0].Error(), "no space left") {
		t.Fatalf("failures with a worker log on /dev/full: %v", fails)
	}
}

// TestWaitFirstTries: the nemesis' wait returns once every slot has tried
// its first start (a failed try counts), or when its context ends.
func TestWaitFirstTries(t *testing.T) {
	tf := newTestFleet(t, fakeworker.Script{}, history.NewMemory(), func(c *Config) { c.Workers = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	tf.firstTried()
	tf.waitFirstTries(ctx)
	if ctx.Err() == nil {
		t.Fatal("returned after one of two slots tried")
	}
	tf.firstTried()
	done := make(chan struct{})
	go func() { tf.waitFirstTries(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting after both slots tried")
	}
}

// TestFleetDrive: every slot runs the workload against its own worker
// until the workload's context ends, and wait returns after all have.
func TestFleetDrive(t *testing.T) {
	hist := history.NewMemory()
	tf := newTestFleet(t, fakeworker.Script{}, hist, func(c *Config) { c.Workers = 2 })
	cfg := tf.cfg
	wl, err := cfg.NewWorkload()
	if err != nil {
		t.Fatal(err)
	}
	gen, stop := context.WithTimeout(context.Background(), time.Second)
	defer stop()
	wait := tf.drive(gen, wl, 1)
	returned := make(chan struct{})
	go func() { wait(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("the slots' loops did not end with the workload")
	}
	tf.shutdown(5 * time.Second)
	acquired := map[history.Process]int{}
	for _, e := range hist.Events() {
		if e.F == history.FAcquire && e.Type == history.OK {
			acquired[e.Process]++
		}
	}
	if acquired[0] == 0 || acquired[1] == 0 {
		t.Errorf("acquisitions by process: %v, want both slots'", acquired)
	}
	if f := tf.failures(); len(f) != 0 {
		t.Errorf("failures: %v", f)
	}
}

// TestHelloProtocolLogged: the hello's protocol version goes into the
// history with its session, and the controller logs each version once:
// an older one, and none, as a warning naming what changed since (the
// credentials among it); the run goes on either way.
func TestHelloProtocolLogged(t *testing.T) {
	for _, tc := range []struct {
		version int
		want    string
	}{
		{2, "worker protocol: the worker speaks protocol 2"},
		{0, "worker protocol: the worker's hello names no protocol version"},
		{worker.Protocol, "msg=\"worker protocol\" version=" + strconv.Itoa(worker.Protocol)},
	} {
		mem := history.NewMemory()
		tf := newTestFleet(t, fakeworker.Script{Protocol: tc.version}, mem, nil)
		var logged strings.Builder
		var mu sync.Mutex
		tf.log = slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logged.Write(b)
		}), nil))
		for range 2 {
			s := tf.start(t, 0)
			mustOK(t, s.Do(context.Background(), acquire("SKU-1")))
		}
		mu.Lock()
		log := logged.String()
		mu.Unlock()
		if strings.Count(log, "worker protocol") != 1 || !strings.Contains(log, tc.want) {
			t.Errorf("version %d: log %q, want one line with %q", tc.version, log, tc.want)
		}
		if old := tc.version < worker.Protocol; old != strings.Contains(log, "ZKCHAOS_ZK_AUTH") || old != strings.Contains(log, "level=WARN") {
			t.Errorf("version %d: the notice names the credentials and warns only for an older version: %q", tc.version, log)
		}
		hellos := 0
		for _, e := range mem.Events() {
			if e.F == history.FSession && e.Type == history.OK && e.Value.Protocol == tc.version {
				hellos++
			}
		}
		if hellos != 2 {
			t.Errorf("version %d: %d connected sessions carry the version, want 2 (one per hello)", tc.version, hellos)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
