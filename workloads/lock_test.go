package workloads

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/history"
)

// scripted answers each operation from a table and records what it saw.
type scripted struct {
	answers map[string]Result
	ops     []Op
	phases  []Phase
}

func (s *scripted) Do(_ context.Context, op Op) Result {
	s.ops = append(s.ops, op)
	return s.answers[op.F]
}

func (s *scripted) SetPhase(p Phase, _ string, _ int64) { s.phases = append(s.phases, p) }
func (s *scripted) Index() int                          { return 0 }
func (s *scripted) Process() int                        { return 0 }

func okWith(v *history.Value) Result { return Result{Type: history.OK, Value: v} }

func TestStepWritesReadPlusOneWithWorkInside(t *testing.T) {
	c := &scripted{answers: map[string]Result{
		history.FAcquire: okWith(&history.Value{Token: history.Int64(7)}),
		history.FRead:    okWith(&history.Value{N: history.Int64(41)}),
		history.FWrite:   okWith(&history.Value{N: history.Int64(42)}),
		history.FRelease: okWith(nil),
	}}
	l := &Lock{Keys: KeyNames(1), Hold: 50 * time.Millisecond, AcquireTimeout: time.Second}
	l.Step(context.Background(), c, rand.New(rand.NewPCG(1, 2)))
	fs := []string{}
	for _, op := range c.ops {
		fs = append(fs, op.F)
	}
	if len(fs) != 4 || fs[0] != "acquire" || fs[1] != "read" || fs[2] != "write" || fs[3] != "release" {
		t.Fatalf("ops %v, want acquire read write release", fs)
	}
	w := c.ops[2]
	if w.Value == nil || *w.Value != 42 {
		t.Errorf("write value %v, want 42 (read + 1)", w.Value)
	}
	if w.Work != 50*time.Millisecond {
		t.Errorf("write work %s, want the hold time", w.Work)
	}
	if c.ops[0].Key != "SKU-1" || c.ops[0].Timeout != time.Second {
		t.Errorf("acquire %+v", c.ops[0])
	}
	sawCritical := false
	for _, p := range c.phases {
		sawCritical = sawCritical || p == Critical
	}
	if !sawCritical || c.phases[len(c.phases)-1] != Idle {
		t.Errorf("phases %v: want Critical during the write and Idle at the end", c.phases)
	}
}

func TestStepStopsAfterInfo(t *testing.T) {
	c := &scripted{answers: map[string]Result{
		history.FAcquire: okWith(&history.Value{Token: history.Int64(7)}),
		history.FRead:    okWith(&history.Value{N: history.Int64(1)}),
		history.FWrite:   {Type: history.Info, Error: "timeout"},
		history.FRelease: okWith(nil),
	}}
	l := &Lock{Keys: KeyNames(3), AcquireTimeout: time.Second}
	l.Step(context.Background(), c, rand.New(rand.NewPCG(1, 2)))
	if last := c.ops[len(c.ops)-1].F; last != history.FWrite {
		t.Fatalf("after an info write the retired process must not be asked anything; last op %s", last)
	}
}

func TestStepReleasesAfterFailedRead(t *testing.T) {
	c := &scripted{answers: map[string]Result{
		history.FAcquire: okWith(&history.Value{Token: history.Int64(7)}),
		history.FRead:    {Type: history.Fail, Error: "not holding"},
		history.FRelease: okWith(nil),
	}}
	l := &Lock{Keys: KeyNames(1), AcquireTimeout: time.Second}
	l.Step(context.Background(), c, rand.New(rand.NewPCG(1, 2)))
	if len(c.ops) != 3 || c.ops[2].F != history.FRelease {
		t.Fatalf("ops %+v: a failed read must skip the write and release", c.ops)
	}
}

func TestKeyNames(t *testing.T) {
	k := KeyNames(3)
	if len(k) != 3 || k[0] != "SKU-1" || k[2] != "SKU-3" {
		t.Errorf("KeyNames(3) = %v", k)
	}
}

// TestLockNodes: the lock root's parents, the root and one node per key,
// parents first, as the controller must create them.
func TestLockNodes(t *testing.T) {
	l := &Lock{Keys: KeyNames(2), Root: "/locks/inventory"}
	var got []string
	for _, n := range l.Nodes() {
		got = append(got, n.Path)
	}
	want := []string{"/locks", "/locks/inventory", "/locks/inventory/SKU-1", "/locks/inventory/SKU-2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("nodes %v, want %v", got, want)
	}
}

// TestRegistry: every workload is built by name, an unknown one is refused
// naming the known ones, and each gate names only its own checkers.
func TestRegistry(t *testing.T) {
	// example-acquire-release is the workload of docs/extending.md,
	// registered by this package's tests only (example_extending_test.go).
	const known = "config, election, example-acquire-release, lock"
	if got := strings.Join(Names(), ", "); got != known {
		t.Errorf("names %s", got)
	}
	if _, err := New("election-2", Settings{}); err == nil || !strings.Contains(err.Error(), "known: "+known) {
		t.Errorf("unknown workload: %v", err)
	}
	if _, err := New(ConfigName, Settings{Workers: 3, Admins: 3}); err == nil || !strings.Contains(err.Error(), "admins 3: must be 1..2 with workers 3") {
		t.Errorf("config with no watcher: %v", err)
	}
	for _, name := range Names() {
		w, err := New(name, Settings{Workers: 6, Admins: 1, Keys: 1, LockRoot: "/l", Tasks: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateGate(w, w.DefaultGate()); err != nil {
			t.Errorf("%s: its own default gate: %v", name, err)
		}
		spec, err := Lookup(name)
		if err != nil || spec.Name() != name || !slices.Equal(CheckerNames(spec), CheckerNames(w)) {
			t.Errorf("Lookup(%s) = %v, %v: want the spec of the workload New builds", name, spec, err)
		}
	}
	if _, err := Lookup("election-2"); err == nil || err.Error() != `unknown workload "election-2" (known: `+known+`)` {
		t.Errorf("Lookup of an unknown workload: %v", err)
	}
}

// TestTraits: only the lock runs on the other services, on PostgreSQL
// and under a run's subtree; an unknown workload has no trait.
func TestTraits(t *testing.T) {
	for _, has := range []func(Traits) bool{
		func(t Traits) bool { return t.OtherServices }, func(t Traits) bool { return t.Postgres },
		func(t Traits) bool { return t.UnderRunRoot }} {
		if got := With(has); got != LockName {
			t.Errorf("With(...) = %q, want lock", got)
		}
	}
	if TraitsOf("elect") != (Traits{}) {
		t.Error("an unknown workload has traits")
	}
}

// TestGateCells: every workload's gate cells expect only its own
// checkers; the lock's are fenced valid under none and every fault of
// LockFaults, unfenced caught by double-writer.
func TestGateCells(t *testing.T) {
	for _, name := range Names() {
		spec, _ := Lookup(name)
		for _, c := range spec.GateCells() {
			if len(c.Expect) == 0 || len(c.Nemesis) == 0 || c.Why == "" {
				t.Errorf("%s: cell %+v: expects nothing, or has no nemesis or why", name, c)
			}
			for n := range c.Expect {
				if !slices.Contains(CheckerNames(spec), n) {
					t.Errorf("%s: cell %v expects %s, not a checker of the workload", name, c.Nemesis, n)
				}
			}
		}
	}
	spec, _ := Lookup(LockName)
	fenced := map[string]bool{}
	var quick int
	for _, c := range spec.GateCells() {
		if c.Quick {
			quick++
		}
		if c.Fenced {
			fenced[c.Nemesis[0]] = c.Expect[fence.NameDoubleWriter] == checker.Valid && c.Expect[lock.NameGrantOverlap] == checker.Valid
		} else if c.Expect[fence.NameDoubleWriter] != checker.Invalid {
			t.Errorf("unfenced lock cell %v must expect double-writer invalid", c.Nemesis)
		}
	}
	for _, f := range append([]string{"none"}, LockFaults...) {
		if !fenced[f] {
			t.Errorf("no fenced lock gate cell valid under %s", f)
		}
	}
	if quick != 2 {
		t.Errorf("%d quick lock cells, want 2", quick)
	}
}
