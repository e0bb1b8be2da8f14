// Package nemesis injects faults into a run and records each one in the
// history as a nemesis operation: what it did, to whom, and whether the
// effect was verified. A nemesis knows the ensemble only through the
// cluster interface and the workers only through Targets, so it does not
// care which backend runs them.
//
// A Fault injects one instance of itself and returns how to undo it; the
// Scheduler decides when (quiet, inject, hold, undo, repeat), bounds every
// injection and undo by its own deadline, records everything, and undoes
// whatever is still in effect when it stops. Each fault is one file that
// registers itself by name.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Holder is a worker process that holds a lock right now.
type Holder struct {
	Process int
	PID     int
	Key     string
	Token   int64
	// InCriticalSection is true while the holder's write is under way and
	// it is doing its protected work after checking the lock: the moment a
	// GC pause does the most harm, because the write that follows is stale.
	InCriticalSection bool
	// CriticalSince is when the controller sent the write whose work is
	// under way (zero when not in the critical section or not known).
	CriticalSince time.Time
	// Proc is the holder's OS process, which pause-holder pauses; nil
	// when the targets cannot act on it.
	Proc WorkerProc
}

// Targets is the controller's live view of its workers.
type Targets interface {
	Holders() []Holder
}

// Env is what a fault may touch.
type Env struct {
	// Cluster is the ensemble; nil when the backend gives no access.
	Cluster cluster.Cluster
	Targets Targets
	// Resource is the run's fenced resource, for faults of its own
	// (lost-reply); nil when the run has none.
	Resource Resource
	// Rand is the run's seeded source for choosing targets; only the
	// scheduler's goroutine uses it.
	Rand   *rand.Rand
	Logger *slog.Logger
	// Service is the run's lock service ("" is ZooKeeper): how sessions
	// are watched and expired, and whether the servers have a leader.
	Service string

	// scope is the fault instance being injected, set by the scheduler on
	// its own copy of Env for each injection: what a fault starts to
	// watch while it is in effect lives and ends with it.
	scope *scope
}

// Effect is one injected fault instance.
type Effect struct {
	// Value describes it for the history: Target, PID, Verified, Detail.
	Value history.Value
	// Undo ends the fault and verifies that it ended; it returns what it
	// did for the history. It must be safe to call when the target is gone,
	// and must return when ctx ends: the scheduler gives it UndoTimeout,
	// and abandons it (recorded as timed out) shortly after.
	Undo func(ctx context.Context) (history.Value, error)
}

// ErrNoTarget means there was nothing to inject the fault into right now
// (e.g. no worker holds a lock): recorded as fail, certainly no effect.
var ErrNoTarget = errors.New("no target for this fault right now")

// targetError is the error of an injection that had chosen its target
// and then did nothing to it (the process exited, the session was gone):
// the failure's record still names the target, with its process.
type targetError struct {
	v   history.Value
	err error
}

func (e *targetError) Error() string { return e.err.Error() }
func (e *targetError) Unwrap() error { return e.err }

// withTarget attaches the chosen target v to err.
func withTarget(v history.Value, err error) error { return &targetError{v: v, err: err} }

// Fault is one kind of fault.
type Fault interface {
	// Verbs are the f of the start and stop operations in the history,
	// e.g. "pause" and "resume".
	Verbs() (start, stop string)
	// Inject injects one instance now and verifies it took effect. An
	// error with a non-nil Effect means injected but not verified (the
	// Effect is still undone later); with a nil Effect, nothing to undo.
	// It must return when ctx ends (InjectTimeout, or the end of the run).
	Inject(ctx context.Context, env *Env) (*Effect, error)
}

var (
	regMu     sync.Mutex
	registry  = map[string]func() Fault{}
	selectors = map[string]string{}
)

// register adds a fault under its --nemesis name; each fault's file calls
// it from init.
func register(name string, mk func() Fault) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[name] = mk
}

// selects records, in words, how the named fault chooses its target
// (schedule.json's selector: "the ZooKeeper leader"); a fault's init
// calls it next to register.
func selects(name, words string) {
	regMu.Lock()
	defer regMu.Unlock()
	selectors[name] = words
}

// Selector is how the named fault chooses its target; false when no
// fault of that name is registered.
func Selector(name string) (string, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	_, ok := registry[name]
	return selectors[name], ok
}

// All is the --nemesis value that mixes every fault the run can use.
const All = "all"

// Names lists the --nemesis values this build knows: "none", "all", and
// every registered fault.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	names := []string{"none", All}
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names[2:])
	return names
}

// ValidateList checks a --nemesis list by name alone.
func ValidateList(list []string) error {
	if len(list) == 0 {
		return fmt.Errorf("%s is empty: give %s", setting.Name("Nemesis"), strings.Join(Names(), ", "))
	}
	known := Names()
	for _, n := range list {
		if !slices.Contains(known, n) {
			return fmt.Errorf("unknown nemesis %q (known: %s)", n, strings.Join(known, ", "))
		}
		if n == "none" && len(list) > 1 {
			return fmt.Errorf("nemesis \"none\" cannot be combined with others")
		}
	}
	return nil
}

// Expand turns a validated --nemesis list into fault names: "all" becomes
// every registered fault a run with caps can use (sorted, so a seed picks
// the same fault from the same list), duplicates go, "none" gives nothing.
func Expand(list []string, caps Caps) []string {
	var out []string
	for _, n := range list {
		switch n {
		case "none":
		case All:
			for _, f := range Names()[2:] {
				if Usable(f, caps) == nil {
					out = append(out, f)
				}
			}
		default:
			out = append(out, n)
		}
	}
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(n string) bool {
		dup := seen[n]
		seen[n] = true
		return dup
	})
}

// Schedule is when faults happen: the first fault starts after First, the
// others after Quiet; each stays for Hold, and is undone; then the next
// one. First is apart from Quiet because the first fault is what a short
// gate run waits for (and may be its only one), while Quiet spaces the
// faults of a long run. InjectTimeout and UndoTimeout
// bound each injection (its verification included) and each undo; zero
// means DefaultInjectTimeout and DefaultUndoTimeout.
type Schedule struct {
	First         time.Duration
	Quiet         time.Duration
	Hold          time.Duration
	InjectTimeout time.Duration
	UndoTimeout   time.Duration
	// EndGrace is how long an injection that began before the workload's
	// end may go on after it (0: DefaultEndGrace). Cut at the end, an
	// injection that is slow because the machine is loaded (iptables
	// killed between two rules) would be recorded unverified though
	// nothing failed but the clock; let finish, it is undone at once by
	// the final Heal. Its own bound still applies.
	EndGrace time.Duration
}

// The default bounds cover the slowest fault with room to spare: a
// server fault waits up to 15 s for a whole ensemble and up to 15 s more
// for its effect; an undo waits up to 30 s for the ensemble to serve
// again after restarting a server.
const (
	DefaultInjectTimeout = 45 * time.Second
	DefaultUndoTimeout   = 45 * time.Second
	DefaultEndGrace      = 10 * time.Second
)

// Config builds the scheduler of a run.
type Config struct {
	Names    []string
	Schedule Schedule
	Env      Env
	History  history.Recorder
	// Caps is what the run can do: a fault it cannot perform is refused,
	// and "all" leaves it out.
	Caps Caps
	// Follow, when set, is the schedule to run instead of drawing faults
	// (Names must then be its faults): each entry at its offset from
	// Origin, held for its hold, one after the other.
	Follow *Plan
	// Origin is what offsets count from (nil: the start of Run).
	Origin *Origin
	// Log, when set, gets every injection as a schedule entry.
	Log EntryLog
	// Followed, when set, is called once every entry of Follow has been
	// injected and undone (not when the workload ended first and left
	// some out): a run that lasts only as long as its schedule ends
	// there.
	Followed func()
}

// Scheduler runs the faults of a --nemesis list on a schedule.
type Scheduler struct {
	cfg    Config
	names  []string
	faults []Fault
	// started is when Run began: the origin of offsets without one.
	started time.Time

	// op serialises the nemesis's operations in the history: the nemesis
	// is one process, so an observation made while a fault's operation is
	// in flight is recorded after that operation's completion.
	op sync.Mutex

	mu     sync.Mutex
	active []active
	// stopped is set when Run ends: an abandoned injection that comes
	// back later can no longer be undone by the scheduler.
	stopped bool
}

type active struct {
	name   string
	stopF  string
	effect *Effect
	since  time.Time
	scope  *scope
}

// New builds the scheduler for a --nemesis list, or for the faults of
// the schedule to follow; "none" (or an empty schedule) gives nil.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Follow != nil {
		cfg.Names = cfg.Follow.Faults()
	}
	if err := ValidateFor(cfg.Names, cfg.Caps); err != nil {
		return nil, err
	}
	names := Expand(cfg.Names, cfg.Caps)
	if len(names) == 0 {
		return nil, nil
	}
	regMu.Lock()
	faults := make([]Fault, len(names))
	for i, n := range names {
		faults[i] = registry[n]()
	}
	regMu.Unlock()
	return newScheduler(cfg, names, faults)
}

// newScheduler builds a scheduler of the given faults, filling in the
// defaults of cfg.
func newScheduler(cfg Config, names []string, faults []Fault) (*Scheduler, error) {
	if cfg.History == nil || cfg.Env.Rand == nil {
		return nil, errors.New("nemesis: a scheduler needs a history and the run's seeded source")
	}
	if cfg.Follow != nil {
		for i, e := range cfg.Follow.Entries {
			if !slices.Contains(names, e.Fault) {
				return nil, fmt.Errorf("nemesis: schedule entry %d: fault %q is not among the scheduler's (%s)", i+1, e.Fault, strings.Join(names, ", "))
			}
		}
	}
	if cfg.Env.Logger == nil {
		cfg.Env.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Env.Service == "" {
		cfg.Env.Service = cfg.Caps.Service
	}
	if cfg.Schedule.InjectTimeout <= 0 {
		cfg.Schedule.InjectTimeout = DefaultInjectTimeout
	}
	if cfg.Schedule.UndoTimeout <= 0 {
		cfg.Schedule.UndoTimeout = DefaultUndoTimeout
	}
	if cfg.Schedule.EndGrace <= 0 {
		cfg.Schedule.EndGrace = DefaultEndGrace
	}
	return &Scheduler{cfg: cfg, names: names, faults: faults}, nil
}

// Faults lists the fault names the scheduler picks from.
func (s *Scheduler) Faults() []string { return slices.Clone(s.names) }

// Run injects faults until ctx ends, then undoes what is still in effect.
// The choice among several faults comes from the run's seeded source, so
// a seed repeats its schedule as far as timing allows.
//
// A fault after the first is not started when ctx's deadline (the
// workload's end) comes before its hold would end: it would be cut short
// and recorded unverified, though nothing failed but the clock. The first
// always starts, so a run with faults has one.
func (s *Scheduler) Run(ctx context.Context) error {
	defer s.finish(ctx)
	s.started = time.Now()
	if s.cfg.Follow != nil {
		s.follow(ctx)
		return nil
	}
	for quiet, first := s.cfg.Schedule.First, true; ; quiet, first = s.cfg.Schedule.Quiet, false {
		if !ctxsleep.Sleep(ctx, quiet) {
			return nil
		}
		if d, ok := ctx.Deadline(); ok && !first && time.Until(d) < s.cfg.Schedule.Hold {
			<-ctx.Done()
			return nil
		}
		i := s.cfg.Env.Rand.IntN(len(s.faults))
		s.injectOne(ctx, s.names[i], s.faults[i], s.cfg.Schedule.Hold)
		ctxsleep.Sleep(ctx, s.cfg.Schedule.Hold)
		s.Heal(ctx)
	}
}

// lateBy is how late an entry of a followed schedule may start before
// the log says so: an injection before it (its target search, its
// verification, its undo) ran past the entry's offset.
const lateBy = 500 * time.Millisecond

// follow injects the entries of cfg.Follow at their offsets from the
// origin, each held for its hold, as Run does with drawn faults: an
// entry after the first is left out, with the rest, when the workload
// ends before its hold would.
func (s *Scheduler) follow(ctx context.Context) {
	origin := s.started
	if s.cfg.Origin != nil {
		var ok bool
		if origin, ok = s.cfg.Origin.Wait(ctx); !ok {
			return
		}
	}
	log := s.cfg.Env.Logger
	for i, e := range s.cfg.Follow.Entries {
		at, hold := origin.Add(time.Duration(e.Offset)), time.Duration(e.Hold)
		if !ctxsleep.Sleep(ctx, time.Until(at)) {
			return
		}
		if late := time.Since(at); late > lateBy {
			log.Warn("nemesis: schedule entry starts late", "entry", i+1, "fault", e.Fault, "offset", time.Duration(e.Offset).String(), "late", late.Round(time.Millisecond).String())
		}
		if d, ok := ctx.Deadline(); ok && i > 0 && time.Until(d) < hold {
			log.Warn("nemesis: the workload ends before this schedule entry's hold would; it and the rest are left out", "entry", i+1, "of", len(s.cfg.Follow.Entries))
			<-ctx.Done()
			return
		}
		s.injectOne(ctx, e.Fault, s.faults[slices.Index(s.names, e.Fault)], hold)
		ctxsleep.Sleep(ctx, hold)
		s.Heal(ctx)
	}
	if ctx.Err() == nil && s.cfg.Followed != nil {
		s.cfg.Followed()
	}
	<-ctx.Done()
}

// offset is now on the schedule's clock: from the origin (0 before it is
// marked), or from the start of Run.
func (s *Scheduler) offset() time.Duration {
	origin := s.started
	if s.cfg.Origin != nil {
		var ok bool
		if origin, ok = s.cfg.Origin.At(); !ok {
			return 0
		}
	}
	return max(0, time.Since(origin))
}

// outlast returns a context that ends d after ctx does, or at cancel.
func outlast(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	octx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(d, cancel) })
	return octx, func() { stop(); cancel() }
}

// finish marks the scheduler stopped and undoes what is left; an
// injection abandoned earlier that returns after this is left to the
// final restore (run/runner/final.go), which sweeps every fault of the run.
func (s *Scheduler) finish(ctx context.Context) {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.Heal(ctx)
}

// injectOne injects f within InjectTimeout and records the outcome: fail
// when nothing was done, info when something may have been done or was
// not verified (an effect is kept and undone either way), ok when the
// fault verified its effect. The schedule's log gets the injection as an
// entry held for hold. An injection under way when ctx ends has
// Schedule.EndGrace more to finish.
func (s *Scheduler) injectOne(ctx context.Context, name string, f Fault, hold time.Duration) {
	ctx, cancelGrace := outlast(ctx, s.cfg.Schedule.EndGrace)
	defer cancelGrace()
	startF, stopF := f.Verbs()
	sc := s.newScope(ctx)
	keep := false
	// Deferred first, so it runs after op is unlocked: a watch that
	// waits to record must get op before its scope can end.
	defer func() {
		if !keep {
			sc.end()
		}
	}()
	s.op.Lock()
	defer s.op.Unlock()
	at := s.offset()
	s.record(history.Invoke, startF, &history.Value{Target: name}, "")
	env := s.cfg.Env
	env.scope = sc
	t0 := time.Now()
	eff, err := bound(ctx, s.cfg.Schedule.InjectTimeout, "inject", func(ctx context.Context) (*Effect, error) {
		return f.Inject(ctx, &env)
	}, func(eff *Effect, err error) { s.late(name, stopF, eff, err, sc) })
	took := time.Since(t0).Round(time.Millisecond).String()
	t, v, errText := s.settle(name, took, eff, err)
	if eff != nil {
		keep = true
		s.mu.Lock()
		s.active = append(s.active, active{name: name, stopF: stopF, effect: eff, since: time.Now(), scope: sc})
		s.mu.Unlock()
	}
	s.record(t, startF, &v, errText)
	if s.cfg.Log != nil {
		if err := s.cfg.Log.Add(entryOf(name, at, hold, t, v, errText)); err != nil {
			s.cfg.Env.Logger.Error("nemesis: schedule", "err", err)
		}
	}
}

// settle turns an injection's result into the start's completion: fail
// when nothing was done, info when something may have been done or was
// not verified, ok when the fault verified its effect.
func (s *Scheduler) settle(name, took string, eff *Effect, err error) (history.Type, history.Value, string) {
	chosen := history.Value{Target: name}
	if te := (*targetError)(nil); errors.As(err, &te) {
		chosen = te.v
	}
	switch {
	case eff == nil && errors.Is(err, ErrNoTarget):
		return history.Fail, chosen, err.Error()
	case eff == nil && err != nil:
		// Nothing to undo, but we cannot be sure nothing happened.
		chosen.Verified = history.Bool(false)
		s.cfg.Env.Logger.Warn("nemesis: inject failed", "fault", name, "took", took, "err", err)
		return history.Info, chosen, err.Error()
	case eff == nil:
		return history.Fail, chosen, "fault returned no effect"
	}
	v := eff.Value
	if err != nil {
		v.Verified = history.Bool(false)
		s.cfg.Env.Logger.Warn("nemesis: fault not verified", "fault", name, "target", v.Target, "took", took, "err", err)
		return history.Info, v, err.Error()
	}
	if v.Verified == nil {
		v.Verified = history.Bool(true)
	}
	s.cfg.Env.Logger.Info("nemesis: fault in effect", "fault", name, "target", v.Target, "took", took, "detail", v.Detail)
	return history.OK, v, ""
}

// late takes the result of an injection that was abandoned at its bound
// (already recorded info): an effect it reports is undone by the next
// Heal, or, once Run has ended, by the final restore.
func (s *Scheduler) late(name, stopF string, eff *Effect, err error, sc *scope) {
	log := s.cfg.Env.Logger
	if eff == nil {
		log.Warn("nemesis: abandoned injection returned, nothing to undo", "fault", name, "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		log.Error("nemesis: abandoned injection returned an effect after the nemesis stopped; the final restore sweeps it",
			"fault", name, "target", eff.Value.Target, "err", err)
		return
	}
	log.Warn("nemesis: abandoned injection returned an effect; the next heal undoes it", "fault", name, "target", eff.Value.Target, "err", err)
	s.active = append(s.active, active{name: name, stopF: stopF, effect: eff, since: time.Now(), scope: sc})
}

// Heal undoes every fault still in effect; safe any time, and twice. Each
// undo gets UndoTimeout from now, whether or not ctx has ended (the run's
// end is when healing matters most), so Heal is bounded by UndoTimeout
// (plus a short grace) per fault in effect.
func (s *Scheduler) Heal(ctx context.Context) {
	s.mu.Lock()
	act := s.active
	s.active = nil
	s.mu.Unlock()
	for _, a := range act {
		// What the fault watched while in effect ends with it, before the
		// undo lets the target recover.
		a.scope.end()
		s.undoOne(context.WithoutCancel(ctx), a)
	}
}

// undoOne undoes one fault within UndoTimeout and records the outcome: ok
// when the undo verified its effect, else info with verified false (an
// undo that timed out says so, and after how long).
func (s *Scheduler) undoOne(ctx context.Context, a active) {
	s.op.Lock()
	defer s.op.Unlock()
	before := a.effect.Value
	s.record(history.Invoke, a.stopF, &history.Value{Target: before.Target, PID: before.PID,
		TargetProcess: before.TargetProcess, Session: before.Session}, "")
	t0 := time.Now()
	undo := a.effect.Undo
	if undo == nil {
		undo = func(context.Context) (history.Value, error) {
			return before, errors.New("the fault gave no way to undo it")
		}
	}
	v, err := bound(ctx, s.cfg.Schedule.UndoTimeout, "undo", undo, func(v history.Value, err error) {
		s.cfg.Env.Logger.Warn("nemesis: abandoned undo returned", "fault", a.name, "target", before.Target, "detail", v.Detail, "err", err)
	})
	took := time.Since(t0).Round(time.Millisecond).String()
	held := t0.Sub(a.since).Round(time.Millisecond).String()
	if v.Target == "" {
		v.Target = before.Target
	}
	if v.PID == 0 {
		v.PID = before.PID
	}
	if v.TargetProcess == nil {
		v.TargetProcess = before.TargetProcess
	}
	if v.Session == "" {
		v.Session = before.Session
	}
	if err != nil {
		v.Verified = history.Bool(false)
		s.record(history.Info, a.stopF, &v, err.Error())
		s.cfg.Env.Logger.Error("nemesis: undo not verified", "fault", a.name, "target", v.Target, "held", held, "took", took, "err", err)
		return
	}
	if v.Verified == nil {
		v.Verified = history.Bool(true)
	}
	s.record(history.OK, a.stopF, &v, "")
	s.cfg.Env.Logger.Info("nemesis: fault undone", "fault", a.name, "target", v.Target, "held", held, "took", took, "detail", v.Detail)
}

// record writes a nemesis event; a history that cannot be written is
// logged, not fatal to the fault itself (the controller notices on its own
// appends).
func (s *Scheduler) record(t history.Type, f string, v *history.Value, errText string) {
	if _, err := s.cfg.History.Append(history.Event{Process: history.Nemesis, Type: t, F: f, Value: v, Error: errText}); err != nil {
		s.cfg.Env.Logger.Error("nemesis: record", "err", err)
	}
}

// instant records an observation of the nemesis (invoke and ok back to
// back), between its fault operations, never inside one.
func (s *Scheduler) instant(f string, v *history.Value) {
	s.op.Lock()
	defer s.op.Unlock()
	s.record(history.Invoke, f, v, "")
	s.record(history.OK, f, v, "")
}
