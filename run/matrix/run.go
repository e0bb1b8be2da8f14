package matrix

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/report/runview"
	"github.com/zkchaos/zkchaos/run/child"
)

// Options configure a matrix run.
type Options struct {
	// Exe is the chaos binary each cell runs.
	Exe string
	// Results is the folder cells write their runs to.
	Results string
	// Repeat runs each cell this many times.
	Repeat int
	// PassRate is the share of a cell's attempts that must come out as
	// expected for the cell to pass (1 = every one). Detection of a
	// timing-dependent bug is a rate, and CI gates on a floor for it.
	PassRate float64
	// Seed is the first attempt's seed; attempt i uses Seed+i.
	Seed int64
	// Out receives the table as it goes.
	Out io.Writer
	// Skip says why a cell cannot run on this machine (its backend is
	// missing), or "" to run it; nil runs every cell. A skipped cell is
	// reported as such, never as passed.
	Skip func(Cell) string
	// Progress, when set, receives the status of the cell being run (each
	// run reports it on a pipe, progress.Pipe), prefixed with the cell's
	// place and name, and is cleared between runs. With Parallel > 1 it
	// shows whichever running cell reported last.
	Progress *progress.Latest
	// Parallel is how many runs go at once (below 1: one). Each run takes
	// its own network slot and results folder, so runs of different cells
	// never share anything but the machine; attempts of one cell run one
	// at a time (they share the cell's folder and its latest link).
	Parallel int
	// FailFast starts no more cells once one is judged anything but
	// pass: a PR job learns at once that its client fails, and what is
	// running finishes. The cells it did not start are reported as
	// skipped, saying why, never as passed.
	FailFast bool
}

// Outcome of one attempt or cell.
type Outcome string

// Outcomes, from best to worst.
const (
	Pass    Outcome = "pass"
	Unknown Outcome = "unknown"
	Wrong   Outcome = "wrong"
	Error   Outcome = "error"
	// Skipped: the cell needs what this machine lacks (a Docker engine),
	// or FailFast left it out; it neither passes nor fails the matrix,
	// and every report says so.
	Skipped Outcome = "skipped"
)

func (o Outcome) rank() int {
	switch o {
	case Pass, Skipped:
		return 0
	case Unknown:
		return 1
	case Wrong:
		return 2
	}
	return 3
}

// Attempt is one `chaos run` of a cell.
type Attempt struct {
	Seed     int64                       `json:"seed"`
	Dir      string                      `json:"dir"`
	Exit     int                         `json:"exit"`
	Actual   map[string]checker.Validity `json:"actual"`
	Outcome  Outcome                     `json:"outcome"`
	Elapsed  time.Duration               `json:"elapsed_ns"`
	FirstBug *time.Duration              `json:"first_violation_ns,omitempty"`
	// ToFirst is FirstBug measured from the run's first client operation
	// (runview.ReadFirst): the time a gate waits for, without the setup.
	ToFirst *time.Duration `json:"to_first_violation_ns,omitempty"`
	// Stopped says the run stopped at its first violation, before its
	// limit (the cell's StopLimit).
	Stopped bool   `json:"stopped_at_first_violation,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// CellResult is a cell with all its attempts.
type CellResult struct {
	Cell     Cell      `json:"-"`
	Name     string    `json:"name"`
	Attempts []Attempt `json:"attempts"`
	Outcome  Outcome   `json:"outcome"`
	// Detected counts attempts in which every checker expected to find a
	// violation found one (only for cells that expect one).
	Detected    int            `json:"detected"`
	MedianFirst *time.Duration `json:"median_first_violation_ns,omitempty"`
	// MedianToFirst and P95ToFirst are the median and the 95th
	// percentile of the detected attempts' ToFirst: what a detection
	// costs, typically and nearly at worst.
	MedianToFirst *time.Duration `json:"median_to_first_violation_ns,omitempty"`
	P95ToFirst    *time.Duration `json:"p95_to_first_violation_ns,omitempty"`
	// Limit is the cell's StopLimit (absent for a cell that runs its
	// time): an attempt that did not detect the violation ran this long.
	Limit time.Duration `json:"limit_ns,omitempty"`
	// SkippedBecause is why a skipped cell did not run.
	SkippedBecause string `json:"skipped_because,omitempty"`
}

// ExpectsViolation reports whether the cell expects any checker invalid.
func (c Cell) ExpectsViolation() bool {
	for _, v := range c.Expect {
		if v == checker.Invalid {
			return true
		}
	}
	return false
}

func (o Options) skip(c Cell) string {
	if o.Skip == nil {
		return ""
	}
	return o.Skip(c)
}

func passes(cr CellResult) int {
	n := 0
	for _, a := range cr.Attempts {
		if a.Outcome == Pass {
			n++
		}
	}
	return n
}

// judge sets the cell's outcome from its attempts: pass when enough
// attempts passed; otherwise the worst thing that happened.
func judge(cr *CellResult, rate float64) {
	var firsts, tos []time.Duration
	worst := Pass
	for _, a := range cr.Attempts {
		if a.Outcome.rank() > worst.rank() {
			worst = a.Outcome
		}
		if cr.Cell.ExpectsViolation() && detected(cr.Cell, a) {
			cr.Detected++
			if a.FirstBug != nil {
				firsts = append(firsts, *a.FirstBug)
			}
			if a.ToFirst != nil {
				tos = append(tos, *a.ToFirst)
			}
		}
	}
	cr.MedianFirst, cr.MedianToFirst = runview.Median(firsts), runview.Median(tos)
	cr.P95ToFirst, cr.Limit = runview.Percentile(tos, 95), cr.Cell.StopLimit()
	if float64(passes(*cr)) >= rate*float64(len(cr.Attempts)) && worst != Error {
		cr.Outcome = Pass
		return
	}
	cr.Outcome = worst
}

func detected(c Cell, a Attempt) bool {
	for k, v := range c.Expect {
		if v == checker.Invalid && a.Actual[k] != checker.Invalid {
			return false
		}
	}
	return true
}

// runAttempt runs `chaos run` for the cell and reads its results.json.
func runAttempt(ctx context.Context, c Cell, o Options, seed int64, prefix string) Attempt {
	a := Attempt{Seed: seed}
	name := slug(c.Name())
	logPath := filepath.Join(o.Results, name+".log")
	r, err := child.Run(ctx, child.Spec{Exe: o.Exe, Args: append([]string{"--results", o.Results, "--name", name}, c.RunArgs(seed)...),
		Log: logPath, Latest: filepath.Join(o.Results, name, "latest"), Progress: o.Progress, Prefix: prefix})
	a.Elapsed, a.Exit, a.Dir = r.Elapsed, r.Exit, r.Dir
	if err != nil {
		a.Outcome, a.Detail = Error, err.Error()
		return a
	}
	dir := r.Dir
	if a.Exit == 255 {
		a.Outcome, a.Detail = Error, fmt.Sprintf("harness failure (see %s)", logPath)
		return a
	}
	res, err := checker.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		a.Outcome, a.Detail = Error, err.Error()
		return a
	}
	a.Actual = map[string]checker.Validity{}
	for n, r := range res.Checkers {
		a.Actual[n] = r.Valid
		if r.Valid == checker.Invalid && c.Expect[n] == checker.Invalid {
			if d := checker.FirstViolation(r); d != nil && (a.FirstBug == nil || *d < *a.FirstBug) {
				a.FirstBug = d
			}
		}
	}
	if a.FirstBug != nil {
		a.ToFirst = toFirst(dir, c)
	}
	a.Stopped = res.Completion != nil && res.Completion.StoppedAtFirst
	a.Outcome = compare(c, a.Actual)
	switch {
	case a.Outcome == Pass:
		a.Outcome, a.Detail = trusted(c, res)
	case a.Outcome == Wrong && a.Stopped:
		// A run stopped early is incomplete: finding less than expected
		// in it decides nothing (checker.Completion).
		a.Outcome, a.Detail = Unknown, "stopped at a first violation the full check does not confirm: "+res.Completion.Why
	}
	return a
}

// toFirst is the attempt's time from its first client operation to the
// first violation of a checker the cell expects invalid; nil when the
// folder does not tell (the table then shows "-").
func toFirst(dir string, c Cell) *time.Duration {
	var names []string
	for n, v := range c.Expect {
		if v == checker.Invalid {
			names = append(names, n)
		}
	}
	f, err := runview.ReadFirst(os.DirFS(dir), names...)
	if err != nil || !f.Found {
		return nil
	}
	d := f.After()
	return &d
}

// trusted says whether a cell's run can be judged at all: a run that did
// not complete, or whose history failed its integrity check, has checker
// answers about data that is not all there. Such a cell is unknown, never
// a pass, whatever its expected checkers said. A run stopped at its first
// violation (a cell that StopsAtFirst) is judged: it expects only
// violations, and a violation found in part of a run is real.
func trusted(c Cell, res checker.Results) (Outcome, string) {
	if cp := res.Completion; cp != nil && cp.StoppedAtFirst && c.StopsAtFirst() {
		return trustedHistory(res)
	}
	if c := res.Completion; c == nil || !c.Completed {
		why := "no completion record"
		if c != nil {
			why = c.Why
		}
		return Unknown, "run incomplete: " + why
	}
	return trustedHistory(res)
}

// trustedHistory: a history that failed its integrity check cannot be
// judged.
func trustedHistory(res checker.Results) (Outcome, string) {
	if r, ok := res.Checkers[integrity.Name]; !ok || r.Valid != checker.Valid {
		return Unknown, "history integrity " + r.Valid.String() + ": " + r.Error
	}
	return Pass, ""
}

// compare judges an attempt: any expected checker with the opposite
// definite verdict is wrong; else any unknown (or missing) is unknown.
func compare(c Cell, actual map[string]checker.Validity) Outcome {
	out := Pass
	for k, want := range c.Expect {
		got, ok := actual[k]
		switch {
		case !ok || got == checker.Unknown:
			if out == Pass {
				out = Unknown
			}
		case got != want:
			return Wrong
		}
	}
	return out
}

func actualString(c Cell, a Attempt) string {
	if a.Actual == nil {
		return "-"
	}
	var parts []string
	for _, k := range sortedKeys(c.Expect) {
		v, ok := a.Actual[k]
		s := "missing"
		if ok {
			s = v.String()
		}
		parts = append(parts, k+"="+s)
	}
	return strings.Join(parts, " ")
}

func outcomeString(a Attempt) string {
	if a.Detail != "" {
		return string(a.Outcome) + ": " + a.Detail
	}
	return string(a.Outcome)
}

func durString(d *time.Duration) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// slug turns a cell name into a test name (a folder).
func slug(s string) string {
	r := strings.NewReplacer("/", "_", "+", "-", ":", "-", " ", "-")
	return r.Replace(s)
}

// Summary is the verdict of the matrix, with Jepsen test-all's exit codes;
// each cell not as expected names what reruns it (Reproduction, with exe
// the chaos binary).
func Summary(w io.Writer, exe string, rs []CellResult) int {
	counts := map[Outcome]int{}
	worst := Pass
	for _, r := range rs {
		counts[r.Outcome]++
		if r.Outcome.rank() > worst.rank() {
			worst = r.Outcome
		}
	}
	fmt.Fprintf(w, "\n%d cells: %d as expected, %d judged wrong, %d unknown, %d harness errors, %d skipped\n",
		len(rs), counts[Pass], counts[Wrong], counts[Unknown], counts[Error], counts[Skipped])
	for _, r := range rs {
		switch r.Outcome {
		case Pass:
		case Skipped:
			fmt.Fprintf(w, "  %s: skipped: %s\n", r.Name, r.SkippedBecause)
		default:
			fmt.Fprintf(w, "  %s: %s (expected %s)", r.Name, r.Outcome, r.Cell.ExpectString())
			if m := missed(r); m != "" {
				fmt.Fprintf(w, ": %s", m)
			}
			fmt.Fprintf(w, "; %s\n", Reproduction(exe, r))
		}
	}
	switch worst {
	case Pass:
		return 0
	case Wrong:
		return 1
	case Unknown:
		return 2
	}
	return 255
}

// WriteJSON writes the results for tools.
func WriteJSON(path string, rs []CellResult) error {
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return fmt.Errorf("encode test-all results: %w", err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
