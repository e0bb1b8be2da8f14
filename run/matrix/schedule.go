package matrix

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/internal/setting"
)

// Run runs the cells, o.Parallel runs at a time, and returns their
// results in cell order. With one at a time (the default) a cell owns the
// machine and its timings are what it measures; with more, the table's
// rows still come in cell order: a row that finished early waits for the
// rows above it. It starts no run once ctx has ended, waits for those
// running, and returns the cells finished before the first unfinished
// one.
func Run(ctx context.Context, cells []Cell, o Options) ([]CellResult, error) {
	if o.Repeat < 1 {
		o.Repeat = 1
	}
	if o.PassRate <= 0 || o.PassRate > 1 {
		o.PassRate = 1
	}
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	if err := os.MkdirAll(o.Results, 0o755); err != nil {
		return nil, fmt.Errorf("results folder: %w", err)
	}
	fmt.Fprintf(o.Out, rowFormat, "cell", "expected", "actual", "first violation", "time", "result")
	t := newTable(cells, o)
	t.run(ctx)
	return t.res[:t.printed], ctx.Err()
}

// rowFormat is a row of the table: cell, expected, actual, first
// violation (firstOf), time, result.
const rowFormat = "%-48s %-34s %-34s %-20s %-8v %s\n"

// job is one attempt of one cell.
type job struct{ cell, attempt int }

// finished is a job with its attempt.
type finished struct {
	job
	a Attempt
}

// table is a matrix run in progress: the attempts as they finish and how
// far the table has been printed.
type table struct {
	cells []Cell
	o     Options
	res   []CellResult
	// got[c][i] is attempt i of cell c once it has finished.
	got [][]*Attempt
	// printed cells are done and judged; row is the next attempt row of
	// cell printed to print.
	printed, row int
	// failed names the first cell judged other than pass, with its
	// outcome, once there is one ("" until then).
	failed string
}

func newTable(cells []Cell, o Options) *table {
	t := &table{cells: cells, o: o, res: make([]CellResult, len(cells)), got: make([][]*Attempt, len(cells))}
	for i, c := range cells {
		t.res[i] = CellResult{Cell: c, Name: c.Name()}
		t.got[i] = make([]*Attempt, o.Repeat)
		if why := o.skip(c); why != "" {
			t.res[i].Outcome, t.res[i].SkippedBecause = Skipped, why
		}
	}
	return t
}

// run starts jobs in cell order while fewer than Parallel run, never two
// of one cell at once, and prints what can be printed after each.
func (t *table) run(ctx context.Context) {
	var pending []job
	for c := range t.cells {
		if t.res[c].Outcome != Skipped {
			for i := 0; i < t.o.Repeat; i++ {
				pending = append(pending, job{c, i})
			}
		}
	}
	done := make(chan finished)
	busy := map[int]bool{}
	running := 0
	t.flush()
	for {
		if t.o.FailFast && t.failed != "" {
			pending = t.leaveOut(pending, busy)
		}
		for running < t.o.Parallel && ctx.Err() == nil {
			k := t.nextFree(pending, busy)
			if k < 0 {
				break
			}
			j := pending[k]
			pending = append(pending[:k], pending[k+1:]...)
			busy[j.cell] = true
			running++
			go func() { done <- finished{j, t.attempt(ctx, j)} }()
		}
		if running == 0 {
			return
		}
		f := <-done
		running--
		busy[f.cell] = false
		t.got[f.cell][f.attempt] = &f.a
		t.flush()
	}
}

// leaveOut marks the cells of pending that have not started skipped
// (FailFast) and returns the jobs left: the rest of a cell already
// started, so that it is judged on all its attempts.
func (t *table) leaveOut(pending []job, busy map[int]bool) []job {
	var keep []job
	for _, j := range pending {
		if busy[j.cell] || slices.ContainsFunc(t.got[j.cell], func(a *Attempt) bool { return a != nil }) {
			keep = append(keep, j)
			continue
		}
		t.res[j.cell].Outcome = Skipped
		t.res[j.cell].SkippedBecause = "not run: " + setting.Name("FailFast") + ", " + t.failed
	}
	if len(keep) < len(pending) {
		t.flush()
	}
	return keep
}

// nextFree is the first pending job whose cell has no attempt running,
// or -1.
func (t *table) nextFree(pending []job, busy map[int]bool) int {
	for k, j := range pending {
		if !busy[j.cell] {
			return k
		}
	}
	return -1
}

// attempt runs one job.
func (t *table) attempt(ctx context.Context, j job) Attempt {
	c := t.cells[j.cell]
	prefix := fmt.Sprintf("cell %d/%d %s", j.cell+1, len(t.cells), c.Name())
	if t.o.Repeat > 1 {
		prefix += fmt.Sprintf(" attempt %d/%d", j.attempt+1, t.o.Repeat)
	}
	return runAttempt(ctx, c, t.o, t.o.Seed+int64(j.attempt), prefix)
}

// flush prints, in cell order, every row whose rows above are printed,
// and judges each cell whose attempts are all in.
func (t *table) flush() {
	o := t.o
	for t.printed < len(t.cells) {
		c, cr := t.cells[t.printed], &t.res[t.printed]
		if cr.Outcome == Skipped {
			fmt.Fprintf(o.Out, rowFormat, trunc(c.Name(), 48), trunc(c.ExpectString(), 34), "-", "-", "-", "skipped: "+cr.SkippedBecause)
			t.printed++
			continue
		}
		for ; t.row < o.Repeat && t.got[t.printed][t.row] != nil; t.row++ {
			a := *t.got[t.printed][t.row]
			cr.Attempts = append(cr.Attempts, a)
			fmt.Fprintf(o.Out, rowFormat, trunc(c.Name(), 48), trunc(c.ExpectString(), 34),
				trunc(actualString(c, a), 34), firstOf(c, a), a.Elapsed.Round(time.Second), outcomeString(a))
		}
		if t.row < o.Repeat {
			return
		}
		judge(cr, o.PassRate)
		if cr.Outcome != Pass && t.failed == "" {
			t.failed = fmt.Sprintf("%s was judged %s", cr.Name, cr.Outcome)
		}
		if o.Repeat > 1 {
			fmt.Fprintf(o.Out, "%-48s %d/%d as expected", trunc(c.Name(), 48), passes(*cr), len(cr.Attempts))
			if c.ExpectsViolation() {
				fmt.Fprintf(o.Out, ", detected %d/%d, first violation after the first client op: %s", cr.Detected, len(cr.Attempts), firstsOf(*cr))
			}
			fmt.Fprintf(o.Out, ": %s\n", cr.Outcome)
		}
		t.printed, t.row = t.printed+1, 0
	}
}
