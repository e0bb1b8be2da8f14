package workloads

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
)

// fakeTable is the register's task table as the election sees it: the
// inits it committed, and how often each task was completed. fail makes
// the next inits fail, committed all the same with lost (a reply lost
// after the commit).
type fakeTable struct {
	mu        sync.Mutex
	inits     [][]string
	completes map[string]int
	fail      int
	lost      bool
	busy      int
	maxBusy   int
}

func newFakeTable() *fakeTable { return &fakeTable{completes: map[string]int{}} }

func (f *fakeTable) InitTasks(_ context.Context, _ string, tasks []string) error {
	f.mu.Lock()
	f.busy++
	f.maxBusy = max(f.maxBusy, f.busy)
	f.mu.Unlock()
	time.Sleep(time.Millisecond) // long enough for another grower to overlap
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy--
	failed := f.fail > 0
	if failed {
		f.fail--
		if !f.lost {
			return errors.New("register unreachable")
		}
	}
	f.inits = append(f.inits, slices.Clone(tasks))
	for _, t := range tasks {
		if _, ok := f.completes[t]; !ok {
			f.completes[t] = 0
		}
	}
	if failed {
		return errors.New("reply lost")
	}
	return nil
}

func (f *fakeTable) Tasks(context.Context, string) (map[string]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for t, n := range f.completes {
		out[t] = n > 0
	}
	return out, nil
}

// claim reports whether the table has t, as a claim of it would.
func (f *fakeTable) claim(t string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.completes[t]
	return ok
}

func (f *fakeTable) complete(t string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.completes[t]++
}

// undone are the table's tasks not completed, sorted.
func (f *fakeTable) undone() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for t, n := range f.completes {
		if n == 0 {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// tableClient is a candidate that always wins, over a fakeTable: a claim
// of a task the table lacks fails, as the register's "unknown task"
// does, and is counted.
type tableClient struct {
	reg     *fakeTable
	mu      sync.Mutex
	unknown []string
	done    []string
}

func (c *tableClient) Do(_ context.Context, op Op) Result {
	switch op.F {
	case history.FClaim:
		if !c.reg.claim(op.Key) {
			c.mu.Lock()
			c.unknown = append(c.unknown, op.Key)
			c.mu.Unlock()
			return Result{Type: history.Fail, Error: "rejected: unknown task"}
		}
	case history.FComplete:
		c.reg.complete(op.Key)
		c.mu.Lock()
		c.done = append(c.done, op.Key)
		c.mu.Unlock()
	}
	return okWith(&history.Value{Token: history.Int64(1)})
}

func (c *tableClient) SetPhase(Phase, string, int64) {}
func (c *tableClient) Index() int                    { return 0 }
func (c *tableClient) Process() int                  { return 0 }

// preparedElection is an election of chunk tasks prepared on a fakeTable.
func preparedElection(t *testing.T, chunk int) (*Election, *fakeTable, *tableClient) {
	t.Helper()
	w, err := New(ElectionName, Settings{Tasks: chunk})
	if err != nil {
		t.Fatal(err)
	}
	reg := newFakeTable()
	if err := w.Prepare(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	return w.(*Election), reg, &tableClient{reg: reg}
}

// TestElectionTableGrowsWhenLow: the table starts with one chunk and
// grows by the next (names going on) only when fewer than half a chunk
// is left; leaders claim only tasks the register has; the final phase
// completes what is left of the live table, not a table sized for the
// whole run, and leaves no task of the register undone.
func TestElectionTableGrowsWhenLow(t *testing.T) {
	e, reg, c := preparedElection(t, 10)
	r := rand.New(rand.NewPCG(3, 4))
	for range 2 {
		e.Step(context.Background(), c, r) // two batches of five: nothing left
	}
	if len(reg.inits) != 1 {
		t.Fatalf("inits %v after two batches, want the first chunk only: half a chunk was left before each", reg.inits)
	}
	for range 5 {
		e.Step(context.Background(), c, r)
	}
	// Steps 3, 5 and 7 each found nothing left and grew the table first:
	// four chunks, 35 of their 40 tasks done.
	want := [][]string{TaskNames(10), taskNames(11, 10), taskNames(21, 10), taskNames(31, 10)}
	if !slices.EqualFunc(reg.inits, want, slices.Equal) {
		t.Fatalf("inits %v, want %v", reg.inits, want)
	}
	if len(c.unknown) != 0 {
		t.Errorf("claims of tasks the register does not have: %v", c.unknown)
	}
	before := len(c.done)
	left := reg.undone()
	e.Final(context.Background(), &configEnd{clients: []Client{c}})
	final := slices.Sorted(slices.Values(c.done[before:]))
	if !slices.Equal(final, left) || len(final) != 5 {
		t.Errorf("the final phase completed %v, want the live table's remainder %v (5 tasks)", final, left)
	}
	if u := reg.undone(); len(u) != 0 {
		t.Errorf("tasks of the register never run: %v", u)
	}
}

// TestElectionGrowthFailureKeepsTheTable: a growth that fails leaves the
// table as it was (the batch runs on what is left) and is tried again
// with the same chunk; one whose init was committed although its reply
// was lost is added by the final phase, which then runs its tasks: else
// exactly-once would call them missing.
func TestElectionGrowthFailureKeepsTheTable(t *testing.T) {
	e, reg, c := preparedElection(t, 4)
	r := rand.New(rand.NewPCG(5, 6))
	e.Step(context.Background(), c, r) // all four done
	reg.fail = 1
	e.Step(context.Background(), c, r) // growth fails: nothing to pick
	if len(reg.inits) != 1 || len(c.unknown) != 0 {
		t.Fatalf("after a failed growth: inits %v, unknown claims %v", reg.inits, c.unknown)
	}
	e.Step(context.Background(), c, r) // tried again
	if want := [][]string{TaskNames(4), taskNames(5, 4)}; !slices.EqualFunc(reg.inits, want, slices.Equal) {
		t.Fatalf("inits %v, want %v", reg.inits, want)
	}
	for i := 0; len(reg.undone()) > 0; i++ {
		if i == 10 {
			t.Fatalf("the second chunk not done in 10 batches: %v left", reg.undone())
		}
		e.Step(context.Background(), c, r)
	}
	reg.fail, reg.lost = 1, true
	e.Step(context.Background(), c, r) // committed, answered an error
	if u := reg.undone(); len(u) != 4 {
		t.Fatalf("undone %v, want the chunk whose reply was lost", u)
	}
	e.Final(context.Background(), &configEnd{clients: []Client{c}})
	if u := reg.undone(); len(u) != 0 {
		t.Errorf("tasks of the register never run after the final phase: %v", u)
	}
	if len(c.unknown) != 0 {
		t.Errorf("claims of tasks the register does not have: %v", c.unknown)
	}
}

// TestElectionGrowsOneAtATime: clients stepping at once grow the table
// one at a time, each chunk once and in order.
func TestElectionGrowsOneAtATime(t *testing.T) {
	e, reg, c := preparedElection(t, 6)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			for range 40 {
				e.Step(context.Background(), c, r)
			}
		})
	}
	wg.Wait()
	if reg.maxBusy != 1 {
		t.Errorf("%d growths at once, want 1", reg.maxBusy)
	}
	if len(reg.inits) < 3 {
		t.Fatalf("inits %v: the table did not grow", reg.inits)
	}
	for i, got := range reg.inits {
		if want := taskNames(1+6*i, 6); !slices.Equal(got, want) {
			t.Errorf("init %d: %v, want %v", i, got, want)
		}
	}
	if len(c.unknown) != 0 {
		t.Errorf("claims of tasks the register does not have: %v", c.unknown)
	}
}

// TestElectionResumeTakesTheTable: a resumed soak's register holds the
// tasks its earlier segments added; the new segment takes them all, runs
// again none of those done, and finishes the others, so none is missing.
func TestElectionResumeTakesTheTable(t *testing.T) {
	reg := newFakeTable()
	for _, tk := range TaskNames(23) {
		reg.completes[tk] = 1
	}
	for _, tk := range []string{"billing:2026-11-30:t5", "billing:2026-11-30:t21", "billing:2026-11-30:t22"} {
		reg.completes[tk] = 0
	}
	w, _ := New(ElectionName, Settings{Tasks: 10})
	e, c := w.(*Election), &tableClient{reg: reg}
	if err := e.Prepare(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	if got, want := e.pick(nil, 10), []string{"billing:2026-11-30:t5", "billing:2026-11-30:t21", "billing:2026-11-30:t22"}; !slices.Equal(got, want) {
		t.Fatalf("live table %v, want the earlier segments' tasks not done %v", got, want)
	}
	e.Step(context.Background(), c, rand.New(rand.NewPCG(1, 1))) // grows: t24 on
	if last := reg.inits[len(reg.inits)-1]; last[0] != "billing:2026-11-30:t24" {
		t.Errorf("grown by %v, want the chunk after the register's t23", last)
	}
	e.Final(context.Background(), &configEnd{clients: []Client{c}})
	for tk, n := range reg.completes {
		if n != 1 {
			t.Errorf("task %s run %d times", tk, n)
		}
	}
}

// TestElectionTableStopsGrowing: the table grows no further than
// MaxTableTasks, whose scan the register's reply bound still holds.
func TestElectionTableStopsGrowing(t *testing.T) {
	e, reg, c := preparedElection(t, MaxTableTasks/2)
	r := rand.New(rand.NewPCG(9, 9))
	for range 3 {
		e.mu.Lock()
		e.live = e.live[:0] // as if all were done
		e.mu.Unlock()
		e.Step(context.Background(), c, r)
	}
	if len(reg.inits) != 2 || e.size != MaxTableTasks {
		t.Errorf("%d inits, table of %d tasks: want it grown once, to %d", len(reg.inits), e.size, MaxTableTasks)
	}
}
