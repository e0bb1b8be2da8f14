package nemesis

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"testing"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/host/workerproc"
)

// This file is the fault example of docs/extending.md, quoted there
// verbatim (docs/extending_test.go keeps the two identical). A real fault
// is the same code in a file of its own, without the test.

// init registers the fault under its --nemesis name, says what a run
// needs for it (ValidateFor refuses it, with the reason, anywhere else)
// and how it chooses its target (schedule.json's selector).
func init() {
	register("example-pause-newest-holder", func() Fault { return pauseNewestHolder{} })
	requires("example-pause-newest-holder", needWorkload("lock"))
	selects("example-pause-newest-holder", "the holder of the newest grant")
}

// pauseNewestHolder pauses the holder of the newest grant (the highest
// token) until the fault is undone: the grant the fence has seen least.
type pauseNewestHolder struct{}

// Verbs are the history's f of the start and the stop.
func (pauseNewestHolder) Verbs() (string, string) { return history.FPause, history.FResume }

// Inject picks its target from the fleet (Targets), never from /proc,
// and pauses it through the holder's handle, which verifies the stop.
func (pauseNewestHolder) Inject(ctx context.Context, env *Env) (*Effect, error) {
	hs := env.Targets.Holders()
	if len(hs) == 0 {
		return nil, ErrNoTarget
	}
	h := slices.MaxFunc(hs, func(a, b Holder) int { return cmp.Compare(a.Token, b.Token) })
	v := history.Value{PID: h.PID, TargetProcess: history.Int(h.Process),
		Target: fmt.Sprintf("process %d (pid %d) holding %s with token %d, the newest grant", h.Process, h.PID, h.Key, h.Token)}
	if h.Proc == nil {
		return nil, withTarget(v, fmt.Errorf("%w: the targets give no handle on the holder's process", ErrNoTarget))
	}
	// pauseProc (pause.go) pauses, watches the session while paused, and
	// returns the Effect whose Undo resumes and verifies.
	return pauseProc(ctx, env, h.Proc, watchSpec{Process: h.Process, PID: h.PID, Session: sessionOf(env, h.PID)}, v)
}

// TestExamplePauseNewestHolder: the fault is found by name, refused where
// it cannot act, and pauses (then resumes) the newest holder for real.
func TestExamplePauseNewestHolder(t *testing.T) {
	const name = "example-pause-newest-holder"
	if !slices.Contains(Names(), name) {
		t.Fatalf("%s not among %v", name, Names())
	}
	if err := ValidateFor([]string{name}, Caps{Workload: "config"}); err == nil {
		t.Error("a config run accepted a fault of the lock's holders")
	}
	if err := ValidateFor([]string{name}, Caps{Workload: "lock"}); err != nil {
		t.Errorf("a lock run refused it: %v", err)
	}
	old, newest := sleeper(t), sleeper(t)
	env := &Env{Rand: rand.New(rand.NewPCG(1, 2)), Targets: holders{
		{Process: 1, PID: old, Key: "SKU-1", Token: 5, Proc: workerproc.New(old, nil)},
		{Process: 2, PID: newest, Key: "SKU-2", Token: 9, Proc: workerproc.New(newest, nil)},
	}}
	eff, err := pauseNewestHolder{}.Inject(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := proc.State(newest); eff.Value.PID != newest || (st != 'T' && st != 't') {
		t.Errorf("paused pid %d (the newest is pid %d, state %c)", eff.Value.PID, newest, st)
	}
	if _, err := eff.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := proc.State(newest); st == 'T' || st == 't' {
		t.Errorf("pid %d still stopped after the undo", newest)
	}
}

// sleeper starts a process for the fault to pause, gone with the test.
func sleeper(t *testing.T) int {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c.Process.Pid
}
