// Package nemesis injects faults into a run and records each one in the
// history as a nemesis operation, with what it did, to whom, and whether
// the effect was verified. A nemesis knows the ensemble only through the
// cluster interface and the workers only through Targets, so it does not
// care which backend runs them.
package nemesis

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/history"
)

// Holder is a worker process that holds a lock right now.
type Holder struct {
	Process int
	PID     int
	Key     string
	Token   int64
	// InCriticalSection is true between the worker's read of the register
	// and its write: the moment a GC pause does the most harm, because the
	// write that follows is the stale one.
	InCriticalSection bool
}

// Targets is the controller's live view of its workers.
type Targets interface {
	Holders() []Holder
}

// Nemesis is one kind of fault on a schedule.
type Nemesis interface {
	// Run injects faults until ctx ends, then undoes what is still in
	// effect before returning.
	Run(ctx context.Context) error
	// Heal undoes every fault still in effect; safe to call any time, and
	// twice.
	Heal(ctx context.Context) error
}

// Names lists the nemeses this build knows, for flag validation.
func Names() []string { return []string{"none", "pause-holder"} }

// ValidateList checks a --nemesis list.
func ValidateList(list []string) error {
	if len(list) == 0 {
		return fmt.Errorf("--nemesis is empty: give %s", strings.Join(Names(), ", "))
	}
	for _, n := range list {
		if !slices.Contains(Names(), n) {
			return fmt.Errorf("unknown nemesis %q (known: %s)", n, strings.Join(Names(), ", "))
		}
		if n == "none" && len(list) > 1 {
			return fmt.Errorf("nemesis \"none\" cannot be combined with others")
		}
	}
	return nil
}

// Schedule is when faults happen: a fault starts after Quiet, stays for
// Hold, and is undone; then the next one.
type Schedule struct {
	Quiet time.Duration
	Hold  time.Duration
}

// Config builds the nemeses of a run.
type Config struct {
	Names    []string
	Schedule Schedule
	Rand     *rand.Rand
	Targets  Targets
	History  history.Recorder
	Logger   *slog.Logger
}

// New builds the nemesis for a --nemesis list ("none" gives nil).
func New(cfg Config) (Nemesis, error) {
	if err := ValidateList(cfg.Names); err != nil {
		return nil, err
	}
	var ns []Nemesis
	for _, n := range cfg.Names {
		switch n {
		case "none":
		case "pause-holder":
			ns = append(ns, &pauseHolder{cfg: cfg, paused: map[int]bool{}})
		}
	}
	switch len(ns) {
	case 0:
		return nil, nil
	case 1:
		return ns[0], nil
	}
	return nil, fmt.Errorf("combining nemeses is not supported yet: %s", strings.Join(cfg.Names, ","))
}

// record writes a nemesis event; a history that cannot be written is
// logged, not fatal to the fault itself (the controller notices on its own
// appends).
func record(cfg Config, t history.Type, f string, v *history.Value, errText string) {
	if _, err := cfg.History.Append(history.Event{Process: history.Nemesis, Type: t, F: f, Value: v, Error: errText}); err != nil {
		cfg.Logger.Error("nemesis: record", "err", err)
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

// pickHolder prefers holders inside their critical section, then any
// holder; the choice among equals comes from the run's seeded source so a
// seed repeats its choices as far as timing allows.
func pickHolder(r *rand.Rand, hs []Holder) (Holder, bool) {
	if len(hs) == 0 {
		return Holder{}, false
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Process < hs[j].Process })
	var in []Holder
	for _, h := range hs {
		if h.InCriticalSection {
			in = append(in, h)
		}
	}
	if len(in) > 0 {
		hs = in
	}
	return hs[r.IntN(len(hs))], true
}
