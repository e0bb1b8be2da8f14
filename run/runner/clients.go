package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/workerproc"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/workloads"
)

// fleet is every worker process of the run: one slot per logical client,
// each running one live process at a time, plus the retired processes that
// may still be alive (paused, or finishing an operation the history already
// closed as info).
type fleet struct {
	cfg Config
	exe string
	env []string
	zk  string
	reg string
	// pg is the PostgreSQL resource's DSN, given to workers instead of
	// reg (--resource postgres).
	pg      string
	pl      placement
	run     *store.Run
	hist    history.Recorder
	log     *slog.Logger
	hardCtx context.Context // cancelled when the controller must stop now
	// fail tells the controller that the run cannot go on (the results
	// folder cannot be written); it may be called many times.
	fail func(error)

	mu    sync.Mutex
	slots []*slot
	// all are the processes started and not yet exited, for teardown and
	// the client faults; an exited one leaves (a soak starts hundreds,
	// and each kept its command, log tail and handles for the rest of
	// the run: "Soak runs", the controller's memory).
	all []*live
	// exited are the last session states of the processes that exited
	// most recently (maxExited), for a fault still verifying what its
	// target reported when the target exits (SessionState).
	exited  []exitedStates
	spawned int
	// protocols are the protocol versions the workers' hellos named so
	// far: each is logged once, not once per worker process.
	protocols map[int]bool
	// applied is the highest version each process reported applying, by
	// process and key (the config workload's final phase waits on it).
	applied map[appliedKey]int64

	// firstTries counts the slots that have not yet tried to start their
	// first worker; tried is closed when none is left (waitFirstTries).
	firstTries atomic.Int32
	tried      chan struct{}
	// origin is marked by the first client operation: the nemesis's
	// schedule counts its offsets from it.
	origin *nemesis.Origin
}

// maxExited bounds fleet.exited: a fault verifies its target within
// seconds, while a run retires a few processes a minute.
const maxExited = 64

// exitedStates is what an exited process had reported of its sessions.
type exitedStates struct {
	pid    int
	states map[int64]string
}

// live is one worker OS process. It is the handler of its worker handle:
// what the worker says is recorded in the order it said it (see
// worker.Handler).
type live struct {
	f       *fleet
	process int
	p       *worker.Proc
	host    *netns.Host
	// wp is the OS process, for client-side faults: made right after the
	// start, while p's PID is surely the worker's.
	wp   *workerproc.Proc
	logf *os.File

	mu sync.Mutex
	// session is the session id the worker last reported connected (0
	// after its expiry), password its password when reported, states the
	// last state reported per session id: what client-side faults aim at
	// and verify against.
	session  int64
	password []byte
	states   map[int64]string
}

// slot is one logical client.
type slot struct {
	f       *fleet
	index   int
	process int
	cur     *live

	mu    sync.Mutex
	phase workloads.Phase
	key   string
	token int64
	// critical is when the phase became Critical (the write was sent);
	// wrote says the section's write is over and the release is next.
	critical time.Time
	wrote    bool
}

func newFleet(cfg Config, exe string, env []string, zk, reg string, pl placement, run *store.Run, hist history.Recorder, log *slog.Logger, hardCtx context.Context, fail func(error)) *fleet {
	f := &fleet{cfg: cfg, exe: exe, env: env, zk: zk, reg: reg, pl: pl, run: run, hist: hist, log: log, hardCtx: hardCtx, fail: fail,
		tried: make(chan struct{}), origin: nemesis.NewOrigin()}
	f.firstTries.Store(int32(cfg.Workers))
	if cfg.Workers <= 0 {
		close(f.tried)
	}
	for i := 0; i < cfg.Workers; i++ {
		f.slots = append(f.slots, &slot{f: f, index: i, process: i})
	}
	return f
}

// startAt numbers the slots' processes from first (a resumed soak: above
// every process of the earlier segments); before the workload starts.
func (f *fleet) startAt(first int) {
	for i, s := range f.slots {
		s.process = first + i
	}
}

// Holders is the nemesis's view: the live processes that hold a lock now.
func (f *fleet) Holders() []nemesis.Holder {
	var hs []nemesis.Holder
	for _, s := range f.slots {
		s.mu.Lock()
		if s.phase != workloads.Idle && s.cur != nil {
			h := nemesis.Holder{Process: s.process, PID: s.cur.p.PID(), Key: s.key,
				Token: s.token, InCriticalSection: s.phase == workloads.Critical, Proc: s.cur.wp}
			if h.InCriticalSection {
				h.CriticalSince = s.critical
			}
			hs = append(hs, h)
		}
		s.mu.Unlock()
	}
	return hs
}

// spawn starts a worker process for a logical process id.
func (f *fleet) spawn(ctx context.Context, process int) (*live, error) {
	prog, args, err := subjects.Command(f.exe, f.cfg.Recipe, subjects.Flags{Workload: f.cfg.workerWorkload(), Service: f.cfg.serviceFlag(), ZK: f.zk, Register: f.reg, Postgres: f.pg,
		Process: process, SessionTimeout: f.cfg.SessionTimeout, Token: f.cfg.Token, Root: f.cfg.lockRoot()})
	if err != nil {
		return nil, err
	}
	cmd, host, err := f.pl.command(ctx, fmt.Sprintf("w%d", process), prog, f.env, args...)
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(f.run.WorkerLog(process), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		f.removeHost(host)
		return nil, fmt.Errorf("worker log: %w", err)
	}
	l := &live{f: f, process: process, host: host, logf: logf, states: map[int64]string{}}
	l.p = worker.New(cmd, worker.Options{Handler: l, Log: logf, LogHead: f.cfg.WorkerLogHead, LogTail: f.cfg.WorkerLogTail,
		OnLogError: func(err error) { f.fail(fmt.Errorf("results folder: worker log %s: %w", logf.Name(), err)) }})
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := l.p.Start(sctx); err != nil {
		logf.Close()
		f.removeHost(host)
		return nil, fmt.Errorf("start worker process %d: %w", process, err)
	}
	p := l.p
	l.wp = workerproc.New(p.PID(), host)
	l.sessionEvent(worker.StateConnected, p.Hello().Session, p.Hello().Password)
	f.mu.Lock()
	f.all = append(f.all, l)
	f.spawned++
	f.mu.Unlock()
	go func() {
		<-p.Done()
		logf.Close()
		f.removeHost(host)
		f.exit(l)
	}()
	f.log.Debug("worker started", "process", process, "pid", p.PID())
	return l, nil
}

// exit takes an exited process out of f.all, keeping its session states
// among the last maxExited.
func (f *fleet) exit(l *live) {
	l.mu.Lock()
	st := exitedStates{pid: l.p.PID(), states: l.states}
	l.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	// New slices, never an edit in place: readers iterate a copy of the
	// slice header outside the lock.
	if i := slices.Index(f.all, l); i >= 0 {
		f.all = slices.Concat(f.all[:i], f.all[i+1:])
	}
	f.exited = append(f.exited[max(0, len(f.exited)-maxExited+1):len(f.exited):len(f.exited)], st)
}

// retiredAlive counts the processes still alive that are no slot's
// current one: retired, and perhaps still acting out an operation the
// history closed as info.
func (f *fleet) retiredAlive() int {
	f.mu.Lock()
	all := f.all
	f.mu.Unlock()
	n := 0
	for _, l := range all {
		if !slices.ContainsFunc(f.slots, func(s *slot) bool { return s.current() == l }) {
			n++
		}
	}
	return n
}

// current is the slot's live process (nil between a retirement and the
// next start).
func (s *slot) current() *live {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (f *fleet) removeHost(h *netns.Host) {
	if h == nil || f.pl.net == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.pl.net.RemoveHost(ctx, h); err != nil {
		f.log.Warn("remove worker namespace", "ns", h.NS, "err", err)
	}
}

// Event records what a worker says unasked (worker.Handler): its hello's
// session, session changes, lost locks, applied config versions. Other
// events are not part of the protocol and are left out.
func (l *live) Event(m worker.Message) {
	switch m.Event {
	case worker.EventHello:
		if spoken := cmp.Or(m.Workload, workloads.LockName); spoken != l.f.cfg.Workload {
			l.f.fail(fmt.Errorf("worker pid %d (%s %s) speaks the %s workload's protocol, and this run is %s %s: give a subject written for %s",
				l.p.PID(), setting.Name("Recipe"), l.f.cfg.Recipe, spoken, setting.Name("Workload"), l.f.cfg.Workload, l.f.cfg.Workload))
		}
		// The hello's session goes into the history as a connected
		// session: it is the session of the process's first grants, which
		// the checkers need to tell which session a loss or a server-side
		// expiry ended.
		l.f.instant(l.process, history.FSession, "", &history.Value{State: worker.StateConnected, Session: m.Session, PID: l.p.PID(), Protocol: m.Protocol}, "")
		l.f.noteProtocol(m.Protocol, l.p.PID())
	case worker.EventSession:
		l.sessionEvent(m.State, m.Session, m.Password)
		l.f.instant(l.process, history.FSession, "", &history.Value{State: m.State, Session: m.Session, PID: l.p.PID()}, "")
	case worker.EventLost, worker.EventDemoted:
		// A lost lock and a lost leadership end the same holder view;
		// the history keeps the workload's own name for it.
		f := history.FLost
		if m.Event == worker.EventDemoted {
			f = history.FDemoted
		}
		l.f.instant(l.process, f, m.Key, &history.Value{Token: m.Token, Node: m.Node, State: m.State, Session: m.Session}, m.Error)
		l.f.lost(l, m.Key)
	case worker.EventApplied:
		l.f.instant(l.process, history.FApplied, m.Key, &history.Value{Version: m.Version, Digest: m.Digest, N: m.Value}, m.Error)
		if m.Version != nil && m.Error == "" {
			l.f.noteApplied(l.process, m.Key, *m.Version)
		}
	}
}

// appliedKey is a process and a key it applied versions of.
type appliedKey struct {
	process int
	key     string
}

// noteApplied keeps the highest version process reported applying of key.
func (f *fleet) noteApplied(process int, key string, v int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.applied == nil {
		f.applied = map[appliedKey]int64{}
	}
	k := appliedKey{process, key}
	if got, ok := f.applied[k]; !ok || v > got {
		f.applied[k] = v
	}
}

// appliedOf is the highest version process reported applying of key.
func (f *fleet) appliedOf(process int, key string) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.applied[appliedKey{process, key}]
	return v, ok
}

// noteProtocol logs the protocol version a worker's hello named, the
// first time a process names it: a version other than this controller's
// (or none) with what changed since, as a warning, since a worker that
// missed a change (the credentials, the register's secret) may complete
// nothing; the run goes on whatever the version, as a worker that names
// none may well speak all of it.
func (f *fleet) noteProtocol(v, pid int) {
	f.mu.Lock()
	seen := f.protocols[v]
	if f.protocols == nil {
		f.protocols = map[int]bool{}
	}
	f.protocols[v] = true
	f.mu.Unlock()
	if seen {
		return
	}
	if n := worker.VersionNotice(v); n != "" {
		f.log.Warn("worker protocol: "+n, "pid", pid, "recipe", f.cfg.Recipe)
		return
	}
	f.log.Info("worker protocol", "version", v, "pid", pid)
}

// Complete records the completion of a request (worker.Handler): the
// answer, or info when there is none.
func (l *live) Complete(req worker.Request, m worker.Message, err error) {
	res := resultOf(m, err)
	l.f.record(history.Event{Process: history.Process(l.process), Type: res.Type, F: req.F, Key: req.Key, Value: res.Value, Error: res.Error})
}

// Late records a response that came after its operation was closed as
// info (worker.Handler), naming the operation it answers. The worker
// handle closes the retired worker's input after it: the worker has done
// the (possibly stale) thing it was paused in the middle of.
func (l *live) Late(req worker.Request, m worker.Message) {
	v := valueOf(m)
	v.Of = req.F
	v.State = m.Type
	l.f.instant(l.process, history.FLate, req.Key, v, m.Error)
}

// ProtocolError is told that the worker broke the protocol
// (worker.Handler); the handle fails its requests from now on, so the
// pending one or the next completes as info with the reason, and the
// process is retired.
func (l *live) ProtocolError(err error) {
	l.f.log.Warn("worker broke the protocol; it will be retired", "process", l.process, "pid", l.p.PID(), "err", err)
}

// lost clears the holder view of a slot whose live process lost key, so
// the nemesis does not pause a worker that no longer holds anything.
func (f *fleet) lost(l *live, key string) {
	for _, s := range f.slots {
		s.mu.Lock()
		if s.cur == l && s.key == key {
			s.phase = workloads.Idle
		}
		s.mu.Unlock()
	}
}

// instant records an event that has no duration as an invoke and an ok at
// once, so every operation in the history is a pair.
func (f *fleet) instant(process int, fn, key string, v *history.Value, errText string) {
	for _, t := range []history.Type{history.Invoke, history.OK} {
		f.record(history.Event{Process: history.Process(process), Type: t, F: fn, Key: key, Value: v, Error: errText})
	}
}

// record appends e to the history. A failure is the results folder's:
// the controller notices it and stops the run (see controller.abort).
func (f *fleet) record(e history.Event) {
	if _, err := f.hist.Append(e); err != nil {
		f.fail(fmt.Errorf("results folder: record history: %w", err))
	}
}

// resultOf is the completion a response (or its absence) stands for.
func resultOf(m worker.Message, err error) workloads.Result {
	if err != nil {
		return workloads.Result{Type: history.Info, Error: infoReason(err)}
	}
	res := workloads.Result{Type: history.Type(m.Type), Error: m.Error, Value: valueOf(m)}
	if !res.Type.Valid() || res.Type == history.Invoke {
		res.Type = history.Info
		res.Error = fmt.Sprintf("worker answered type %q", m.Type)
	}
	return res
}

func valueOf(m worker.Message) *history.Value {
	return &history.Value{Token: m.Token, N: m.Value, Current: m.CurrentToken, Node: m.Node, Session: m.Session,
		Wakeups: m.Wakeups, Version: m.Version, Digest: m.Digest, State: m.State}
}

// loop is one logical client: critical sections until gen ends.
func (s *slot) loop(gen context.Context, wl workloads.Workload, r *rand.Rand) {
	first := true
	for gen.Err() == nil {
		if s.cur == nil {
			l, err := s.f.spawn(s.f.hardCtx, s.process)
			if first {
				first = false
				s.f.firstTried()
			}
			if err != nil {
				s.f.log.Warn("cannot start worker; retrying", "process", s.process, "err", err)
				ctxsleep.Sleep(gen, time.Second)
				continue
			}
			s.mu.Lock()
			s.cur = l
			s.mu.Unlock()
		}
		wl.Step(gen, s, r)
	}
}

// firstTried counts a slot's first attempt to start a worker, whatever
// its outcome.
func (f *fleet) firstTried() {
	if f.firstTries.Add(-1) == 0 {
		close(f.tried)
	}
}

// waitFirstTries returns once every slot has tried to start its first
// worker, or ctx ends. The nemesis waits for it: a fault injected while
// the workers are still connecting (a paused majority takes every new
// session with it) leaves a run with no client, which proves nothing; a
// slot whose first start failed does not hold it up.
func (f *fleet) waitFirstTries(ctx context.Context) {
	select {
	case <-f.tried:
	case <-ctx.Done():
	}
}

// Index implements workloads.Client.
func (s *slot) Index() int { return s.index }

// Process implements workloads.Client: the slot's logical process now.
func (s *slot) Process() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.process
}

// SetPhase is the workload telling where it is in the critical section.
func (s *slot) SetPhase(p workloads.Phase, key string, token int64) {
	s.mu.Lock()
	switch {
	case p == workloads.Critical && s.phase != workloads.Critical:
		// A new critical window (a leader's next task): its write is
		// not over yet.
		s.critical, s.wrote = time.Now(), false
	case p == workloads.Holding && s.phase == workloads.Critical:
		s.wrote = true
	case p != workloads.Critical:
		s.wrote = false
	}
	s.phase, s.key, s.token = p, key, token
	s.mu.Unlock()
}

// Do performs one operation on the slot's live process and records it. An
// operation in flight is never cut short by the end of generation, only by
// its own timeout: cutting it would turn a clean completion into info.
func (s *slot) Do(_ context.Context, op workloads.Op) workloads.Result {
	l := s.cur
	if l == nil {
		return workloads.Result{Type: history.Fail, Error: "no worker process"}
	}
	inv := history.Event{Process: history.Process(s.process), Type: history.Invoke, F: op.F, Key: op.Key}
	if op.Value != nil || op.Expected != nil {
		inv.Value = &history.Value{N: op.Value, Expected: op.Expected}
	}
	// Recorded, clock and all, before the request is written to the
	// worker: a controller descheduled in between makes the invocation's
	// time earlier than the worker's act, never later, so the history
	// always explains what the register logs (TestElectionStalls).
	s.f.record(inv)
	s.f.origin.Mark()
	req := worker.Request{F: op.F, Key: op.Key, Value: op.Value, ExpectedVersion: op.Expected}
	timeout := s.f.cfg.OpTimeout
	if op.Timeout > 0 {
		req.TimeoutMS = op.Timeout.Milliseconds()
		timeout += op.Timeout
	}
	if op.Work > 0 {
		req.WorkMS = op.Work.Milliseconds()
		timeout += op.Work
	}
	ctx, cancel := context.WithTimeout(s.f.hardCtx, timeout)
	defer cancel()
	// The completion is recorded by l.Complete, in the order of the
	// worker's lines, before Do returns.
	res := resultOf(l.p.Do(ctx, req))
	if res.Type == history.Info {
		s.retire()
	}
	return res
}

func infoReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "controller stopping"
	}
	return strings.TrimSpace(err.Error())
}

// retire ends the slot's current process as a logical process: it keeps
// running (it may be paused and may still act), and a fresh process id with
// a fresh worker takes the slot.
func (s *slot) retire() {
	s.mu.Lock()
	l := s.cur
	s.cur = nil
	s.phase = workloads.Idle
	s.process += s.f.cfg.Workers
	s.mu.Unlock()
	if l == nil {
		return
	}
	l.p.Retire()
	s.f.log.Info("process retired", "process", l.process, "pid", l.p.PID(), "next", s.process)
}

// shutdown closes every worker's input (each finishes, releases and exits)
// and kills those still alive after grace.
func (f *fleet) shutdown(grace time.Duration) {
	f.mu.Lock()
	all := append([]*live(nil), f.all...)
	f.mu.Unlock()
	for _, l := range all {
		_ = l.p.CloseInput()
	}
	// One deadline for all: once it passes, whoever is left is killed.
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
wait:
	for _, l := range all {
		select {
		case <-l.p.Done():
		case <-deadline.C:
			break wait
		}
	}
	for _, l := range all {
		select {
		case <-l.p.Done():
		default:
			f.log.Warn("worker did not exit; killing", "process", l.process, "pid", l.p.PID())
			_ = l.p.Kill()
			<-l.p.Done()
		}
	}
}

// drive runs every slot's loop, each with its own source drawn from the
// run's seed, until gen ends; wait returns once every loop has.
func (f *fleet) drive(gen context.Context, wl workloads.Workload, seed uint64) (wait func()) {
	var clients sync.WaitGroup
	for _, s := range f.slots {
		clients.Add(1)
		r := rand.New(rand.NewPCG(seed, uint64(s.index)+1))
		go func() { defer clients.Done(); s.loop(gen, wl, r) }()
	}
	return clients.Wait
}

// Clients implements workloads.End: every slot.
func (f *fleet) Clients() []workloads.Client {
	out := make([]workloads.Client, len(f.slots))
	for i, s := range f.slots {
		out[i] = s
	}
	return out
}

// validateFleet checks the workers' part of c: how many, the keys they
// lock, the token they present, the subject they run, their timing and
// their logs' caps.
func validateFleet(c Config) []error {
	var errs []error
	if c.Workers < 1 || c.Workers > 200 {
		errs = append(errs, setting.Errorf("Workers", fmt.Sprint(c.Workers), "must be 1..200"))
	}
	if c.Keys < 1 || c.Keys > 1000 {
		errs = append(errs, setting.Errorf("Keys", fmt.Sprint(c.Keys), "must be 1..1000"))
	}
	if !slices.Contains([]string{"czxid", "seq"}, c.Token) {
		errs = append(errs, setting.Errorf("Token", fmt.Sprintf("%q", c.Token), "must be czxid or seq"))
	}
	if err := subjects.ValidateService(c.workerWorkload(), c.service(), c.Recipe); err != nil {
		errs = append(errs, setting.Err("Recipe", "", err))
	}
	if c.Hold < 0 || c.Think < 0 {
		errs = append(errs, setting.Refused("Hold", "%s and %s must not be negative", setting.Name("Hold"), setting.Name("Think")))
	}
	if c.AcquireTimeout <= 0 || c.OpTimeout <= 0 {
		errs = append(errs, setting.Refused("AcquireTimeout", "%s and %s must be positive", setting.Name("AcquireTimeout"), setting.Name("OpTimeout")))
	}
	if c.WorkerLogHead < 0 || c.WorkerLogTail < 0 {
		errs = append(errs, setting.Refused("WorkerLogHead", "worker log cap %d+%d bytes: must not be negative", c.WorkerLogHead, c.WorkerLogTail))
	}
	return errs
}
