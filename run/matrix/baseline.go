package matrix

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/report/diagnose"
)

// The gate's baseline: before its cells, chaos gate runs the subject for
// a few seconds without a fault and stops when it completed nothing there
// or failed every operation of a kind. A subject that cannot run (a
// worker written before the credentials were required never
// authenticates, and every acquire is refused) would otherwise take every
// cell's full time (or its limit, waiting for a violation that cannot
// come) and come out as cells judged wrong or unknown, with nothing
// saying that it never held a lock.

// DefaultBaseline is the baseline's workload time: a healthy subject
// completes dozens of operations of each kind in it, and the run's setup
// (the ensemble's start) costs more than the workload.
const DefaultBaseline = 3 * time.Second

// BaselineVariant names the baseline's run among the cells' (its folder
// and log under the gate's results).
const BaselineVariant = "baseline"

// BaselineOf is the baseline of cells: the first cell this machine can
// run (skip says which it cannot; nil runs any), with its subject,
// workload, service, backend and flags, but no fault, fenced, nothing
// expected, for d, on one server: whether a subject can run at all does
// not depend on the ensemble's size, and one server starts in a third of
// the CPU time of three (measured on a loaded machine: ready in 3.1 s
// against 10.7 s), which is most of the baseline's time. It is false
// when every cell is skipped.
func BaselineOf(cells []Cell, skip func(Cell) string, d time.Duration) (Cell, bool) {
	for _, c := range cells {
		if skip != nil && skip(c) != "" {
			continue
		}
		c.Nemesis, c.Fencing, c.Expect, c.Limit = []string{"none"}, "on", nil, 0
		c.Variant, c.Why, c.Smoke = BaselineVariant, "the subject completes operations of every kind without a fault", false
		c.Args = append(slices.Clone(c.Args), "--nodes", "1", "--time-limit", d.String())
		return c, true
	}
	return Cell{}, false
}

// Baseline is a baseline run and what its records say.
type Baseline struct {
	Cell    Cell
	Attempt Attempt
	// Diagnosis is the run folder's (report/diagnose), when Err is nil.
	Diagnosis diagnose.Diagnosis
	// Err says why the folder could not be diagnosed.
	Err error
	// Log is the run's output (its stderr: the controller's log).
	Log string
}

// RunBaseline runs the baseline cell c once, with o's seed, and
// diagnoses its folder.
func RunBaseline(ctx context.Context, c Cell, o Options) Baseline {
	b := Baseline{Cell: c, Log: filepath.Join(o.Results, slug(c.Name())+".log")}
	if err := os.MkdirAll(o.Results, 0o755); err != nil {
		b.Attempt = Attempt{Seed: o.Seed, Outcome: Error, Detail: err.Error()}
		b.Err = fmt.Errorf("results folder: %w", err)
		return b
	}
	b.Attempt = runAttempt(ctx, c, o, o.Seed, "baseline")
	if b.Attempt.Dir == "" {
		b.Err = fmt.Errorf("no run folder: %s", b.Attempt.Detail)
		return b
	}
	b.Diagnosis, b.Err = diagnose.Dir(os.DirFS(b.Attempt.Dir))
	return b
}

// HarnessFailed says the baseline's run itself failed (exit 255, or no
// run folder): the cells, on the same machine and subject, would too.
func (b Baseline) HarnessFailed() bool { return b.Attempt.Exit == 255 || b.Attempt.Dir == "" }

// Stuck says the subject could not run in the baseline: the gate stops.
func (b Baseline) Stuck() bool { return b.Err == nil && b.Diagnosis.Stuck() }

// Write tells the baseline's outcome: the diagnosis of a subject that
// could not run; the harness failure with the end of the run's output;
// or, in a line, what the subject completed.
func (b Baseline) Write(w io.Writer) {
	a := b.Attempt
	where := cmp.Or(a.Dir, b.Log)
	switch {
	case b.HarnessFailed():
		fmt.Fprintf(w, "baseline (%s, %.1fs): the run failed (exit %d): %s; its output ends:\n", b.Cell.Name(), a.Elapsed.Seconds(), a.Exit, a.Detail)
		for _, l := range lastLines(b.Log, 10) {
			fmt.Fprintf(w, "  | %s\n", l)
		}
	case b.Stuck():
		fmt.Fprintf(w, "baseline (%s, %.1fs, exit %d): %s\n", b.Cell.Name(), a.Elapsed.Seconds(), a.Exit, where)
		b.Diagnosis.Write(w)
	case b.Err != nil:
		fmt.Fprintf(w, "baseline (%s, %.1fs): cannot tell whether the subject ran: %v\n", b.Cell.Name(), a.Elapsed.Seconds(), b.Err)
	default:
		fmt.Fprintf(w, "baseline (%.1fs): the subject ran: %s\n", a.Elapsed.Seconds(), b.Diagnosis.Counts())
	}
}

// lastLines are the last n lines of the file at path (none when it
// cannot be read).
func lastLines(path string, n int) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return lines[max(0, len(lines)-n):]
}
