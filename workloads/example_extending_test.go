package workloads

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

// This file is the workload example of docs/extending.md, quoted there
// verbatim (docs/extending_test.go keeps the two identical). A real
// workload is the same code in a file of its own, without the test.

// ExampleAcquireReleaseName is the example's --workload value.
const ExampleAcquireReleaseName = "example-acquire-release"

// ExampleAcquireRelease takes and gives back locks, touching no
// resource: it asks only whether the lock itself holds (one holder at a
// time, tokens in grant order).
type ExampleAcquireRelease struct {
	Keys           []string
	Root           string
	Hold           time.Duration
	AcquireTimeout time.Duration
}

// init registers the workload's Spec (its zero value answers the Spec's
// questions) and how a run's settings build it.
func init() {
	register(&ExampleAcquireRelease{}, func(s Settings) (Workload, error) {
		return &ExampleAcquireRelease{Keys: KeyNames(s.Keys), Root: s.LockRoot, Hold: s.Hold, AcquireTimeout: s.AcquireTimeout}, nil
	})
}

// Name implements Spec.
func (*ExampleAcquireRelease) Name() string { return ExampleAcquireReleaseName }

// Checkers implement Spec: integrity first (it gates every run), then
// the questions of this workload, then the numbers.
func (*ExampleAcquireRelease) Checkers() []checker.Checker {
	return []checker.Checker{
		{Name: integrity.Name, Check: integrity.Check, Always: true},
		{Name: lock.NameGrantOverlap, Check: lock.CheckGrantOverlap},
		{Name: lock.NameTokenOrder, Check: lock.CheckTokenOrder},
		{Name: stats.Name, Check: stats.CheckStats},
	}
}

// DefaultGate implements Spec.
func (*ExampleAcquireRelease) DefaultGate() []string {
	return []string{lock.NameGrantOverlap, lock.NameTokenOrder}
}

// GateCells implement Spec: no standard cells yet.
func (*ExampleAcquireRelease) GateCells() []GateCell { return nil }

// Traits implement Spec: ZooKeeper and the register only.
func (*ExampleAcquireRelease) Traits() Traits { return Traits{} }

// Nodes are the lock's: the root and one node per key.
func (a *ExampleAcquireRelease) Nodes() []Node {
	return (&Lock{Keys: a.Keys, Root: a.Root}).Nodes()
}

// Prepare implements Workload: nothing to set up in the resource.
func (*ExampleAcquireRelease) Prepare(context.Context, Resource) error { return nil }

// Step acquires a random key, holds it and releases it; it returns early
// after an info completion (its process was retired).
func (a *ExampleAcquireRelease) Step(ctx context.Context, c Client, r *rand.Rand) {
	key := a.Keys[r.IntN(len(a.Keys))]
	defer c.SetPhase(Idle, "", 0)
	acq := c.Do(ctx, Op{F: history.FAcquire, Key: key, Timeout: a.AcquireTimeout})
	if acq.Type != history.OK || acq.Value == nil || acq.Value.Token == nil {
		return
	}
	// Holding tells the nemesis this client is a holder (pause-holder's
	// target).
	c.SetPhase(Holding, key, *acq.Value.Token)
	ctxsleep.Sleep(ctx, a.Hold)
	c.Do(ctx, Op{F: history.FRelease, Key: key})
}

// Final implements Workload: nothing is left to read.
func (*ExampleAcquireRelease) Final(context.Context, End) {}

// DefaultFaults implement Workload: a holder paused past its session.
func (*ExampleAcquireRelease) DefaultFaults() []string { return []string{"pause-holder"} }

// DefaultTiming implements Workload: the run's defaults.
func (*ExampleAcquireRelease) DefaultTiming() Timing { return Timing{} }

// TestExampleAcquireRelease builds the example by name, checks its gate
// against its checkers and runs one step on a scripted client.
func TestExampleAcquireRelease(t *testing.T) {
	w, err := New(ExampleAcquireReleaseName, Settings{Keys: 2, LockRoot: "/locks/example", AcquireTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateGate(w, w.DefaultGate()); err != nil {
		t.Errorf("its own gate: %v", err)
	}
	if n := w.Nodes(); len(n) != 4 || n[3].Path != "/locks/example/SKU-2" {
		t.Errorf("nodes %v, want /locks, the root and two keys", n)
	}
	c := &scripted{answers: map[string]Result{
		history.FAcquire: okWith(&history.Value{Token: history.Int64(7)}),
		history.FRelease: okWith(nil),
	}}
	w.Step(context.Background(), c, rand.New(rand.NewPCG(1, 2)))
	if len(c.ops) != 2 || c.ops[0].F != history.FAcquire || c.ops[1].F != history.FRelease || c.ops[0].Key != c.ops[1].Key {
		t.Errorf("ops %+v, want an acquire and a release of one key", c.ops)
	}
	if !slices.Equal(c.phases, []Phase{Holding, Idle}) {
		t.Errorf("phases %v, want holding then idle", c.phases)
	}
}
