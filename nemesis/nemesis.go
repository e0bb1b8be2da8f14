// Package nemesis injects faults into a run and records each one in the
// history as a nemesis operation: what it did, to whom, and whether the
// effect was verified. A nemesis knows the ensemble only through the
// cluster interface and the workers only through Targets, so it does not
// care which backend runs them.
//
// A Fault injects one instance of itself and returns how to undo it; the
// Scheduler decides when (quiet, inject, hold, undo, repeat), records
// everything, and undoes whatever is still in effect when it stops. Each
// fault is one file that registers itself by name.
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
	// Rand is the run's seeded source for choosing targets; only the
	// scheduler's goroutine uses it.
	Rand   *rand.Rand
	Logger *slog.Logger
}

// Effect is one injected fault instance.
type Effect struct {
	// Value describes it for the history: Target, PID, Verified, Detail.
	Value history.Value
	// Undo ends the fault and verifies that it ended; it returns what it
	// did for the history. It must be safe to call when the target is gone.
	Undo func(ctx context.Context) (history.Value, error)
}

// ErrNoTarget means there was nothing to inject the fault into right now
// (e.g. no worker holds a lock): recorded as fail, certainly no effect.
var ErrNoTarget = errors.New("no target for this fault right now")

// Fault is one kind of fault.
type Fault interface {
	// Verbs are the f of the start and stop operations in the history,
	// e.g. "pause" and "resume".
	Verbs() (start, stop string)
	// Inject injects one instance now and verifies it took effect. An
	// error with a non-nil Effect means injected but not verified (the
	// Effect is still undone later); with a nil Effect, nothing to undo.
	Inject(ctx context.Context, env *Env) (*Effect, error)
}

var (
	regMu    sync.Mutex
	registry = map[string]func() Fault{}
)

// register adds a fault under its --nemesis name; each fault's file calls
// it from init.
func register(name string, mk func() Fault) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[name] = mk
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
		return fmt.Errorf("--nemesis is empty: give %s", strings.Join(Names(), ", "))
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

// ValidateFor checks a --nemesis list for a run with or without network
// namespaces: a fault that cuts traffic is refused without them, before
// anything starts, rather than failing at every injection. "all" is not
// refused: it means every fault the run can use.
func ValidateFor(list []string, netns bool) error {
	if err := ValidateList(list); err != nil {
		return err
	}
	if netns {
		return nil
	}
	var refused []string
	for _, n := range list {
		if n != All && NeedsNetns(n) {
			refused = append(refused, n)
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("%s need network namespaces (root and --net netns or auto); this run is --net loopback, where every process shares 127.0.0.1 and there is no traffic to cut",
			strings.Join(refused, ", "))
	}
	return nil
}

// Expand turns a validated --nemesis list into fault names: "all" becomes
// every registered fault the run can use (sorted, so a seed picks the same
// fault from the same list), duplicates go, "none" gives nothing.
func Expand(list []string, netns bool) []string {
	var out []string
	for _, n := range list {
		switch n {
		case "none":
		case All:
			for _, f := range Names()[2:] {
				if netns || !NeedsNetns(f) {
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

// Schedule is when faults happen: a fault starts after Quiet, stays for
// Hold, and is undone; then the next one.
type Schedule struct {
	Quiet time.Duration
	Hold  time.Duration
}

// Config builds the scheduler of a run.
type Config struct {
	Names    []string
	Schedule Schedule
	Env      Env
	History  history.Recorder
	// Netns says the run has network namespaces; without them "all" leaves
	// out the faults that cut traffic.
	Netns bool
}

// Scheduler runs the faults of a --nemesis list on a schedule.
type Scheduler struct {
	cfg    Config
	names  []string
	faults []Fault

	mu     sync.Mutex
	active []active
}

type active struct {
	name   string
	stopF  string
	effect *Effect
	since  time.Time
}

// New builds the scheduler for a --nemesis list; "none" gives nil.
func New(cfg Config) (*Scheduler, error) {
	if err := ValidateFor(cfg.Names, cfg.Netns); err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: cfg}
	names := Expand(cfg.Names, cfg.Netns)
	regMu.Lock()
	defer regMu.Unlock()
	for _, n := range names {
		s.names = append(s.names, n)
		s.faults = append(s.faults, registry[n]())
	}
	if len(s.faults) == 0 {
		return nil, nil
	}
	return s, nil
}

// Faults lists the fault names the scheduler picks from.
func (s *Scheduler) Faults() []string { return slices.Clone(s.names) }

// Run injects faults until ctx ends, then undoes what is still in effect.
// The choice among several faults comes from the run's seeded source, so
// a seed repeats its schedule as far as timing allows.
func (s *Scheduler) Run(ctx context.Context) error {
	defer s.Heal(context.Background())
	for {
		if !sleep(ctx, s.cfg.Schedule.Quiet) {
			return nil
		}
		i := s.cfg.Env.Rand.IntN(len(s.faults))
		s.injectOne(ctx, s.names[i], s.faults[i])
		sleep(ctx, s.cfg.Schedule.Hold)
		s.Heal(context.Background())
	}
}

func (s *Scheduler) injectOne(ctx context.Context, name string, f Fault) {
	startF, stopF := f.Verbs()
	s.record(history.Invoke, startF, &history.Value{Target: name}, "")
	t0 := time.Now()
	eff, err := f.Inject(ctx, &s.cfg.Env)
	took := time.Since(t0).Round(time.Millisecond).String()
	switch {
	case eff == nil && errors.Is(err, ErrNoTarget):
		s.record(history.Fail, startF, &history.Value{Target: name}, err.Error())
		return
	case eff == nil && err != nil:
		// Nothing to undo, but we cannot be sure nothing happened.
		s.record(history.Info, startF, &history.Value{Target: name}, err.Error())
		s.cfg.Env.Logger.Warn("nemesis: inject failed", "fault", name, "err", err)
		return
	case eff == nil:
		s.record(history.Fail, startF, &history.Value{Target: name}, "fault returned no effect")
		return
	}
	s.mu.Lock()
	s.active = append(s.active, active{name: name, stopF: stopF, effect: eff, since: time.Now()})
	s.mu.Unlock()
	v := eff.Value
	if err != nil {
		v.Verified = history.Bool(false)
		s.record(history.Info, startF, &v, err.Error())
		s.cfg.Env.Logger.Warn("nemesis: fault not verified", "fault", name, "target", v.Target, "took", took, "err", err)
		return
	}
	if v.Verified == nil {
		v.Verified = history.Bool(true)
	}
	s.record(history.OK, startF, &v, "")
	s.cfg.Env.Logger.Info("nemesis: fault in effect", "fault", name, "target", v.Target, "took", took, "detail", v.Detail)
}

// Heal undoes every fault still in effect; safe any time, and twice.
func (s *Scheduler) Heal(ctx context.Context) {
	s.mu.Lock()
	act := s.active
	s.active = nil
	s.mu.Unlock()
	for _, a := range act {
		before := a.effect.Value
		s.record(history.Invoke, a.stopF, &history.Value{Target: before.Target, PID: before.PID}, "")
		t0 := time.Now()
		v, err := a.effect.Undo(ctx)
		took := time.Since(t0).Round(time.Millisecond).String()
		held := t0.Sub(a.since).Round(time.Millisecond).String()
		if v.Target == "" {
			v.Target = before.Target
		}
		if v.PID == 0 {
			v.PID = before.PID
		}
		if err != nil {
			v.Verified = history.Bool(false)
			s.record(history.Info, a.stopF, &v, err.Error())
			s.cfg.Env.Logger.Error("nemesis: undo not verified", "fault", a.name, "target", v.Target, "held", held, "took", took, "err", err)
			continue
		}
		if v.Verified == nil {
			v.Verified = history.Bool(true)
		}
		s.record(history.OK, a.stopF, &v, "")
		s.cfg.Env.Logger.Info("nemesis: fault undone", "fault", a.name, "target", v.Target, "held", held, "took", took, "detail", v.Detail)
	}
}

// record writes a nemesis event; a history that cannot be written is
// logged, not fatal to the fault itself (the controller notices on its own
// appends).
func (s *Scheduler) record(t history.Type, f string, v *history.Value, errText string) {
	if _, err := s.cfg.History.Append(history.Event{Process: history.Nemesis, Type: t, F: f, Value: v, Error: errText}); err != nil {
		s.cfg.Env.Logger.Error("nemesis: record", "err", err)
	}
}

// sleep waits d or until ctx ends; false means ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
