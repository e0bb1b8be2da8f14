package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
)

// Tests of the scheduler's loop. The scheduler is the unit: its faults
// are test doubles of the Fault interface (what a real fault does is
// tested against real processes and servers elsewhere), its history is
// the in-memory recorder.

// fakeFault injects by calling inject; each effect it returns counts its
// undos.
type fakeFault struct {
	start, stop string
	inject      func(ctx context.Context, env *Env) (*Effect, error)
}

func (f *fakeFault) Verbs() (string, string) { return f.start, f.stop }

func (f *fakeFault) Inject(ctx context.Context, env *Env) (*Effect, error) { return f.inject(ctx, env) }

// undoCounter is an Undo that counts its calls and verifies.
type undoCounter struct{ n atomic.Int32 }

func (u *undoCounter) undo(context.Context) (history.Value, error) {
	u.n.Add(1)
	return history.Value{Detail: "undone"}, nil
}

// effect returns an effect on process 7 whose undo u counts.
func (u *undoCounter) effect() *Effect {
	return &Effect{Value: history.Value{Target: "process 7 (pid 70)", PID: 70, TargetProcess: history.Int(7)}, Undo: u.undo}
}

// testScheduler builds a scheduler of faults named f0, f1, ... on an
// in-memory history, with a seeded source.
func testScheduler(t *testing.T, sched Schedule, seed uint64, faults ...Fault) (*Scheduler, *history.Memory) {
	t.Helper()
	h := history.NewMemory()
	var names []string
	for i := range faults {
		names = append(names, fmt.Sprintf("f%d", i))
	}
	s, err := newScheduler(Config{Schedule: sched, History: h,
		Env: Env{Rand: rand.New(rand.NewPCG(seed, 1))}}, names, faults)
	if err != nil {
		t.Fatal(err)
	}
	return s, h
}

// nemesisOps are the nemesis events of h.
func nemesisOps(h *history.Memory) []history.Event {
	var out []history.Event
	for _, e := range h.Events() {
		if e.Process == history.Nemesis {
			out = append(out, e)
		}
	}
	return out
}

// opsText renders events as "type f" lines, for failure messages.
func opsText(es []history.Event) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\n  %d %s %s %+v err=%q", e.Time/1e6, e.Type, e.F, derefValue(e.Value), e.Error)
	}
	return b.String()
}

func derefValue(v *history.Value) history.Value {
	if v == nil {
		return history.Value{}
	}
	return *v
}

func TestInjectClassification(t *testing.T) {
	chosen := history.Value{Target: "process 3 (pid 30)", PID: 30, TargetProcess: history.Int(3)}
	for _, tc := range []struct {
		name     string
		inject   func(u *undoCounter) (*Effect, error)
		typ      history.Type
		verified *bool // nil: no verified field
		undone   bool
		process  *int // the target process the completion names
		errHas   string
	}{
		{"no target", func(*undoCounter) (*Effect, error) { return nil, fmt.Errorf("%w: none holds", ErrNoTarget) },
			history.Fail, nil, false, nil, "no target"},
		{"no target after choosing one", func(*undoCounter) (*Effect, error) {
			return nil, withTarget(chosen, fmt.Errorf("%w: pid 30 exited", ErrNoTarget))
		}, history.Fail, nil, false, history.Int(3), "pid 30 exited"},
		{"error without effect", func(*undoCounter) (*Effect, error) { return nil, errors.New("maybe sent") },
			history.Info, history.Bool(false), false, nil, "maybe sent"},
		{"error with effect", func(u *undoCounter) (*Effect, error) { return u.effect(), errors.New("not seen") },
			history.Info, history.Bool(false), true, history.Int(7), "not seen"},
		{"verified", func(u *undoCounter) (*Effect, error) { return u.effect(), nil },
			history.OK, history.Bool(true), true, history.Int(7), ""},
		{"no effect, no error", func(*undoCounter) (*Effect, error) { return nil, nil },
			history.Fail, nil, false, nil, "no effect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u undoCounter
			f := &fakeFault{start: "pause", stop: "resume", inject: func(context.Context, *Env) (*Effect, error) { return tc.inject(&u) }}
			s, h := testScheduler(t, Schedule{}, 1, f)
			s.injectOne(context.Background(), "f0", f, 0)
			s.Heal(context.Background())
			ops := nemesisOps(h)
			if len(ops) < 2 || ops[0].Type != history.Invoke || ops[1].F != "pause" || ops[1].Type != tc.typ {
				t.Fatalf("want invoke then %s pause:%s", tc.typ, opsText(ops))
			}
			v := derefValue(ops[1].Value)
			if (v.Verified == nil) != (tc.verified == nil) || (v.Verified != nil && *v.Verified != *tc.verified) {
				t.Errorf("verified = %v, want %v", v.Verified, tc.verified)
			}
			if !strings.Contains(ops[1].Error, tc.errHas) {
				t.Errorf("error %q lacks %q", ops[1].Error, tc.errHas)
			}
			if (v.TargetProcess == nil) != (tc.process == nil) || (v.TargetProcess != nil && *v.TargetProcess != *tc.process) {
				t.Errorf("target process = %v, want %v", v.TargetProcess, tc.process)
			}
			wantUndos, wantOps := 0, 2
			if tc.undone {
				wantUndos, wantOps = 1, 4
			}
			if got := int(u.n.Load()); got != wantUndos || len(ops) != wantOps {
				t.Fatalf("%d undos and %d events, want %d and %d:%s", got, len(ops), wantUndos, wantOps, opsText(ops))
			}
			if tc.undone {
				stop := ops[3]
				if ops[2].Type != history.Invoke || ops[2].F != "resume" || stop.Type != history.OK || stop.F != "resume" {
					t.Fatalf("want resume invoke and ok:%s", opsText(ops))
				}
				for _, e := range ops[2:] {
					if p := derefValue(e.Value).TargetProcess; p == nil || *p != 7 {
						t.Errorf("%s %s: target process %v, want 7", e.Type, e.F, p)
					}
				}
			}
		})
	}
}

// TestUndoAfterHold: the fault stays for the hold, and then is undone.
func TestUndoAfterHold(t *testing.T) {
	var u undoCounter
	const hold = 150 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeFault{start: "pause", stop: "resume", inject: func(context.Context, *Env) (*Effect, error) {
		return u.effect(), nil
	}}
	s, h := testScheduler(t, Schedule{Quiet: time.Millisecond, Hold: hold}, 1, f)
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	waitFor(t, func() bool { return u.n.Load() >= 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ops := nemesisOps(h)
	if len(ops) < 4 || ops[1].Type != history.OK || ops[2].F != "resume" {
		t.Fatalf("want a pause and its resume:%s", opsText(ops))
	}
	if held := time.Duration(ops[2].Time - ops[1].Time); held < hold {
		t.Errorf("undone %s after the injection, before the %s hold", held, hold)
	}
}

// TestUndoWhenRunEndsMidHold: a run that ends during the hold undoes the
// fault at once, not after the hold.
func TestUndoWhenRunEndsMidHold(t *testing.T) {
	var u undoCounter
	injected := make(chan struct{})
	f := &fakeFault{start: "pause", stop: "resume", inject: func(context.Context, *Env) (*Effect, error) {
		close(injected)
		return u.effect(), nil
	}}
	s, h := testScheduler(t, Schedule{Quiet: time.Millisecond, Hold: time.Hour}, 1, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	<-injected
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended mid-hold")
	}
	if u.n.Load() != 1 {
		t.Fatalf("undone %d times, want once:%s", u.n.Load(), opsText(nemesisOps(h)))
	}
}

// TestInjectOutlastsRunEnd: an injection still going when the workload
// ends is let finish (within EndGrace), recorded as it really ended, and
// undone at once: a slow machine does not turn it unverified.
func TestInjectOutlastsRunEnd(t *testing.T) {
	u, ops := endRunMidInject(t, 10*time.Second, 300*time.Millisecond)
	if u.n.Load() != 1 || len(ops) != 4 || ops[1].Type != history.OK || ops[3].Type != history.OK {
		t.Fatalf("undone %d times; want pause ok then resume ok:%s", u.n.Load(), opsText(ops))
	}
}

// TestUndoWhenRunEndsMidInject: an injection cut short by the end of the
// run and its grace, which had already done something, is recorded
// unverified and still undone.
func TestUndoWhenRunEndsMidInject(t *testing.T) {
	u, ops := endRunMidInject(t, 50*time.Millisecond, time.Hour)
	if u.n.Load() != 1 || len(ops) != 4 || ops[1].Type != history.Info || ops[3].Type != history.OK {
		t.Fatalf("undone %d times; want info pause then resume ok:%s", u.n.Load(), opsText(ops))
	}
	if strings.Contains(ops[1].Error, "timed out") {
		t.Errorf("the end of the run is not a timeout: %q", ops[1].Error)
	}
}

// endRunMidInject runs a scheduler with grace as its EndGrace, ends the
// run as soon as its fault's injection starts, and returns the fault's
// undo counter and the nemesis operations. The injection verifies its
// effect after verifyIn, or fails unverified when its context ends
// first (the signal went out; verification waits).
func endRunMidInject(t *testing.T, grace, verifyIn time.Duration) (*undoCounter, []history.Event) {
	t.Helper()
	u := &undoCounter{}
	started := make(chan struct{})
	f := &fakeFault{start: "pause", stop: "resume", inject: func(ctx context.Context, _ *Env) (*Effect, error) {
		close(started)
		select {
		case <-time.After(verifyIn):
			return u.effect(), nil
		case <-ctx.Done():
			return u.effect(), fmt.Errorf("not seen stopped: %w", ctx.Err())
		}
	}}
	s, h := testScheduler(t, Schedule{Quiet: time.Millisecond, Hold: time.Hour, EndGrace: grace}, 1, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	<-started
	cancel()
	<-done
	return u, nemesisOps(h)
}

// TestUndoThatHangsIsCut: an undo that never returns is abandoned at its
// bound (plus the grace), recorded info, unverified, saying it timed out
// and after how long; Heal returns.
func TestUndoThatHangsIsCut(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	const bound = 200 * time.Millisecond
	f := &fakeFault{start: "isolate", stop: "heal", inject: func(context.Context, *Env) (*Effect, error) {
		return &Effect{Value: history.Value{Target: "process 2", TargetProcess: history.Int(2)},
			Undo: func(context.Context) (history.Value, error) {
				<-release // ignores its context, like iptables -w behind a held lock
				return history.Value{}, nil
			}}, nil
	}}
	s, h := testScheduler(t, Schedule{UndoTimeout: bound}, 1, f)
	s.injectOne(context.Background(), "f0", f, 0)
	start := time.Now()
	s.Heal(context.Background())
	took := time.Since(start)
	if took > bound+cutGrace+2*time.Second {
		t.Fatalf("Heal took %s with a %s bound", took, bound)
	}
	ops := nemesisOps(h)
	last := ops[len(ops)-1]
	if len(ops) != 4 || last.F != "heal" || last.Type != history.Info {
		t.Fatalf("want heal info:%s", opsText(ops))
	}
	if v := derefValue(last.Value); v.Verified == nil || *v.Verified || v.TargetProcess == nil || *v.TargetProcess != 2 {
		t.Errorf("heal record %+v: want verified false and target process 2", v)
	}
	if !strings.Contains(last.Error, "timed out after 200ms") || !strings.Contains(last.Error, "abandoned") {
		t.Errorf("error %q does not say it timed out after 200ms and was abandoned", last.Error)
	}
}

// TestUndoThatOverrunsSaysSo: an undo that honours its context but is
// still failing at its bound returns its own error, recorded as a
// timeout, within the bound.
func TestUndoThatOverrunsSaysSo(t *testing.T) {
	const bound = 150 * time.Millisecond
	f := &fakeFault{start: "pause", stop: "resume", inject: func(context.Context, *Env) (*Effect, error) {
		return &Effect{Undo: func(ctx context.Context) (history.Value, error) {
			<-ctx.Done()
			return history.Value{}, fmt.Errorf("pid 9 still stopped: %w", context.Cause(ctx))
		}}, nil
	}}
	s, h := testScheduler(t, Schedule{UndoTimeout: bound}, 1, f)
	s.injectOne(context.Background(), "f0", f, 0)
	start := time.Now()
	s.Heal(context.Background())
	if took := time.Since(start); took >= bound+cutGrace {
		t.Errorf("Heal took %s: it waited for the cut, not for the undo's own return", took)
	}
	last := nemesisOps(h)[3]
	if last.Type != history.Info || !strings.Contains(last.Error, "undo timed out after 150ms: pid 9 still stopped") {
		t.Fatalf("want info, timed out after 150ms with the undo's error:%s", opsText(nemesisOps(h)))
	}
}

// TestInjectThatHangsIsCut: an injection that never returns is recorded
// info at its bound; the effect it reports later is undone by the next
// Heal.
func TestInjectThatHangsIsCut(t *testing.T) {
	var u undoCounter
	release := make(chan struct{})
	returned := make(chan struct{})
	f := &fakeFault{start: "kill", stop: "restart", inject: func(context.Context, *Env) (*Effect, error) {
		<-release
		defer close(returned)
		return u.effect(), nil
	}}
	s, h := testScheduler(t, Schedule{InjectTimeout: 100 * time.Millisecond}, 1, f)
	start := time.Now()
	s.injectOne(context.Background(), "f0", f, 0)
	if took := time.Since(start); took > 100*time.Millisecond+cutGrace+2*time.Second {
		t.Fatalf("injectOne took %s with a 100ms bound", took)
	}
	ops := nemesisOps(h)
	if len(ops) != 2 || ops[1].Type != history.Info || !strings.Contains(ops[1].Error, "inject timed out after 100ms") {
		t.Fatalf("want kill info, timed out:%s", opsText(ops))
	}
	close(release)
	<-returned
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.active) == 1
	})
	s.Heal(context.Background())
	if u.n.Load() != 1 {
		t.Fatalf("the late effect was undone %d times, want once", u.n.Load())
	}
}

// TestHealTwice: a second Heal (the run's end after the loop's own) finds
// nothing left and records nothing.
func TestHealTwice(t *testing.T) {
	var u undoCounter
	f := &fakeFault{start: "pause", stop: "resume", inject: func(context.Context, *Env) (*Effect, error) { return u.effect(), nil }}
	s, h := testScheduler(t, Schedule{}, 1, f)
	s.injectOne(context.Background(), "f0", f, 0)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { s.Heal(context.Background()) })
	}
	wg.Wait()
	s.Heal(context.Background())
	if n := u.n.Load(); n != 1 || len(nemesisOps(h)) != 4 {
		t.Fatalf("undone %d times, want once:%s", n, opsText(nemesisOps(h)))
	}
}

// TestRecordsAlternate: over a run mixing every outcome, the nemesis's
// records alternate invoke and completion of one operation, and every
// fault that may have taken effect is followed by its undo before the
// next fault starts.
func TestRecordsAlternate(t *testing.T) {
	var u undoCounter
	var n atomic.Int32
	outcomes := []func() (*Effect, error){
		func() (*Effect, error) { return u.effect(), nil },
		func() (*Effect, error) { return nil, ErrNoTarget },
		func() (*Effect, error) { return u.effect(), errors.New("unverified") },
		func() (*Effect, error) { return nil, errors.New("unknown") },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mk := func(start, stop string) Fault {
		return &fakeFault{start: start, stop: stop, inject: func(_ context.Context, env *Env) (*Effect, error) {
			i := int(n.Add(1))
			if i >= 12 {
				cancel()
			}
			// An observation made during the injection, as a session
			// watch makes one: it must not land inside the operation.
			env.scope.start(func(context.Context) {
				env.scope.s.instant(history.FSessionGone, &history.Value{TargetProcess: history.Int(7)})
			})
			time.Sleep(5 * time.Millisecond) // the observation is ready before the injection ends
			return outcomes[i%len(outcomes)]()
		}}
	}
	s, h := testScheduler(t, Schedule{Quiet: time.Millisecond, Hold: time.Millisecond}, 3,
		mk("pause", "resume"), mk("isolate", "heal"), mk("expire", "expire-end"))
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	ops := nemesisOps(h)
	var open, lastFault *history.Event
	stops := 0
	for i := range ops {
		e := &ops[i]
		if e.Type == history.Invoke {
			if open != nil {
				t.Fatalf("event %d: invoke %s while %s is in flight:%s", i, e.F, open.F, opsText(ops))
			}
			open = e
			continue
		}
		if open == nil || open.F != e.F {
			t.Fatalf("event %d: %s %s completes no invocation:%s", i, e.Type, e.F, opsText(ops))
		}
		open = nil
		switch {
		case e.F == history.FSessionGone:
		case history.IsFaultStop(e.F):
			if lastFault == nil || lastFault.Type == history.Fail {
				t.Fatalf("event %d: %s follows no fault in effect:%s", i, e.F, opsText(ops))
			}
			if stop, _ := history.StopVerb(lastFault.F); stop != e.F {
				t.Fatalf("event %d: %s does not follow its fault:%s", i, e.F, opsText(ops))
			}
			stops++
			lastFault = nil
		default:
			if lastFault != nil && lastFault.Type == history.OK {
				t.Fatalf("event %d: %s after %s ok without its undo:%s", i, e.F, lastFault.F, opsText(ops))
			}
			lastFault = e
		}
	}
	if open != nil {
		t.Fatalf("ends with %s in flight:%s", open.F, opsText(ops))
	}
	if got := int(u.n.Load()); got != 6 || stops != 6 {
		t.Errorf("%d undos and %d stop records for 6 effects:%s", got, stops, opsText(ops))
	}
}

// TestSeededChoice: the same seed picks the same faults in the same
// order; another seed picks another order.
func TestSeededChoice(t *testing.T) {
	picks := func(seed uint64) []string {
		var got []string
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		mk := func(name string) Fault {
			return &fakeFault{start: "pause", stop: "resume", inject: func(context.Context, *Env) (*Effect, error) {
				if got = append(got, name); len(got) == 12 {
					cancel()
				}
				return nil, ErrNoTarget
			}}
		}
		s, _ := testScheduler(t, Schedule{Quiet: time.Microsecond}, seed, mk("a"), mk("b"), mk("c"))
		if err := s.Run(ctx); err != nil {
			t.Fatal(err)
		}
		return got
	}
	one, again, other := picks(42), picks(42), picks(43)
	if !slices.Equal(one, again) {
		t.Errorf("seed 42 picked %v, then %v", one, again)
	}
	if slices.Equal(one, other) {
		t.Errorf("seeds 42 and 43 picked the same %v", one)
	}
	for _, f := range []string{"a", "b", "c"} {
		if !slices.Contains(one, f) {
			t.Errorf("seed 42 never picked %s in 12 draws: %v", f, one)
		}
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFirstFaultApartFromQuiet: the first fault waits First, every later
// one Quiet after the undo before it.
func TestFirstFaultApartFromQuiet(t *testing.T) {
	var u undoCounter
	const first, quiet = 20 * time.Millisecond, 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeFault{start: "pause", stop: "resume", inject: func(context.Context, *Env) (*Effect, error) {
		return u.effect(), nil
	}}
	s, h := testScheduler(t, Schedule{First: first, Quiet: quiet, Hold: time.Millisecond}, 1, f)
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	waitFor(t, func() bool { return u.n.Load() >= 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ops := nemesisOps(h)
	if len(ops) < 8 || ops[0].F != "pause" || ops[4].F != "pause" {
		t.Fatalf("want two faults:%s", opsText(ops))
	}
	if gap := time.Duration(ops[4].Time - ops[3].Time); gap < quiet {
		t.Errorf("second fault %s after the first's undo, before Quiet %s:%s", gap, quiet, opsText(ops))
	}
	if wait := time.Duration(ops[0].Time); wait < first || wait >= quiet {
		t.Errorf("first fault after %s on the history's clock: want First (%s), not Quiet", wait, first)
	}
}
