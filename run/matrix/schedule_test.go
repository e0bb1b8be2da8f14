package matrix

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// fakeRunEnv makes the test binary play `chaos run` for the scheduling
// tests: a real child process on the real command line, which sleeps
// the time its recipe names, records when it ran, and leaves a checked
// run folder as the real one does.
const fakeRunEnv = "ZKCHAOS_MATRIX_FAKE_RUN"

// fakeAwaitEnv makes each fake run, after its sleep, wait until a run of
// another cell has started (at most awaitBound): runs that go two at a
// time then overlap however slowly a loaded machine starts them, and
// runs that go one at a time do not, as the first waits in vain.
const fakeAwaitEnv = "ZKCHAOS_MATRIX_FAKE_AWAIT"

const awaitBound = 30 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(fakeRunEnv) == "1" {
		if err := fakeRun(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(255)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeRun is the fake `chaos run`: --recipe is how long it sleeps.
func fakeRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	results, name, recipe := fs.String("results", "", ""), fs.String("name", "", ""), fs.String("recipe", "", "")
	seed := fs.Int64("seed", 0, "")
	fs.String("nemesis", "", "")
	fs.String("fencing", "", "")
	fs.Bool("stop-at-first", false, "")
	fs.String("gate", "", "")
	fs.Int("nodes", 0, "")
	limit := fs.Duration("time-limit", 0, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := appendFile(filepath.Join(*results, "limits"), fmt.Sprintf("%s %s\n", *name, *limit)); err != nil {
		return err
	}
	// A recipe ending +unconfirmed stopped at a first violation its full
	// check did not confirm.
	dur, unconfirmed := strings.CutSuffix(*recipe, "+unconfirmed")
	sleep, err := time.ParseDuration(dur)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := appendFile(filepath.Join(*results, "starts"), *name+"\n"); err != nil {
		return err
	}
	time.Sleep(sleep)
	if os.Getenv(fakeAwaitEnv) == "1" {
		awaitOther(filepath.Join(*results, "starts"), *name)
	}
	span := fmt.Sprintf("%s %d %d %d\n", *name, *seed, start.UnixNano(), time.Now().UnixNano())
	if err := appendFile(filepath.Join(*results, "spans"), span); err != nil {
		return err
	}
	run, err := store.Create(*results, *name, time.Now())
	if err != nil {
		return err
	}
	ev := history.Event{Process: 0, Type: history.Invoke, F: history.FAcquire, Key: "k", Time: int64(time.Second)}
	line, _ := ev.Marshal()
	if err := os.WriteFile(run.Path(store.HistoryFile), append(line, '\n'), 0o644); err != nil {
		return err
	}
	first := int64(time.Second) + *seed*int64(time.Second)
	res := checker.Results{Valid: checker.Invalid, Completion: &checker.Completion{Completed: true}, Checkers: map[string]checker.Result{
		integrity.Name:         {Valid: checker.Valid},
		fence.NameDoubleWriter: {Valid: checker.Invalid, Details: fence.DoubleWriterDetails{FirstViolationAfterNS: &first}},
	}}
	if unconfirmed {
		res.Valid, res.Completion = checker.Unknown, &checker.Completion{StoppedAtFirst: true, Why: "stopped at its first violation (double-writer)"}
		res.Checkers[fence.NameDoubleWriter] = checker.Result{Valid: checker.Valid}
	}
	return checker.WriteResults(run.Path(store.ResultsFile), res)
}

// awaitOther waits until the starts file names a run other than name, or
// awaitBound has passed.
func awaitOther(starts, name string) {
	for deadline := time.Now().Add(awaitBound); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(starts)
		for _, l := range strings.Fields(string(b)) {
			if l != name {
				return
			}
		}
	}
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runFake runs cells whose recipes are sleep times through the fake run.
func runFake(t *testing.T, parallel, repeat int, sleeps ...string) ([]CellResult, string, string) {
	t.Helper()
	return runFakeWith(t, Options{Repeat: repeat, Parallel: parallel}, sleeps...)
}

// runFakeWith is runFake with more options: o's Exe, Results, Seed and
// Out are the fake's own.
func runFakeWith(t *testing.T, o Options, sleeps ...string) ([]CellResult, string, string) {
	t.Helper()
	t.Setenv(fakeRunEnv, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cells []Cell
	for _, s := range sleeps {
		cells = append(cells, Cell{Recipe: s, Nemesis: []string{"none"}, Fencing: "off", Expect: invalid(fence.NameDoubleWriter)})
	}
	dir := t.TempDir()
	var table strings.Builder
	o.Exe, o.Results, o.Seed, o.Out = exe, dir, 1, &table
	rs, err := Run(context.Background(), cells, o)
	if err != nil {
		t.Fatal(err)
	}
	return rs, table.String(), dir
}

type span struct {
	name       string
	start, end int64
}

func readSpans(t *testing.T, dir string) []span {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "spans"))
	if err != nil {
		t.Fatal(err)
	}
	var out []span
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s span
		var seed int64
		if _, err := fmt.Sscan(l, &s.name, &seed, &s.start, &s.end); err != nil {
			t.Fatalf("span %q: %v", l, err)
		}
		out = append(out, s)
	}
	return out
}

// TestParallelKeepsCellOrder: with two runs at once, a slow first cell
// overlaps the others, at most two runs overlap, two attempts of one cell
// never do, and the rows, the results and their JSON come in cell order
// and equal those of one run at a time (but for times and folders). The
// runs in parallel each wait, after their sleep, for a run of another
// cell to have started (fakeAwaitEnv): a loaded machine once started the
// slow cell's process only after the next cell's run had ended.
func TestParallelKeepsCellOrder(t *testing.T) {
	sleeps := []string{"900ms", "100ms", "150ms"}
	serial, serialTable, _ := runFake(t, 1, 2, sleeps...)
	t.Setenv(fakeAwaitEnv, "1")
	par, parTable, dir := runFake(t, 2, 2, sleeps...)
	spans := readSpans(t, dir)
	overlapped := false
	for i, a := range spans {
		at := 1 // runs going when a started, a included
		for j, b := range spans {
			if i != j && a.start < b.end && b.start < a.end {
				overlapped = true
				if a.name == b.name {
					t.Errorf("two attempts of %s ran at once", a.name)
				}
			}
			if i != j && b.start <= a.start && a.start < b.end {
				at++
			}
		}
		if at > 2 {
			t.Errorf("%d runs at once when %s started; at most 2", at, a.name)
		}
	}
	if !overlapped {
		t.Errorf("no runs overlapped with --parallel 2: %+v", spans)
	}
	if len(par) != len(sleeps) || len(serial) != len(sleeps) {
		t.Fatalf("%d and %d results, want %d", len(par), len(serial), len(sleeps))
	}
	rows := func(table string) []string {
		var names []string
		for _, l := range strings.Split(table, "\n")[1:] {
			if f := strings.Fields(l); len(f) > 0 {
				names = append(names, f[0]+" "+f[len(f)-1])
			}
		}
		return names
	}
	if got, want := strings.Join(rows(parTable), "\n"), strings.Join(rows(serialTable), "\n"); got != want {
		t.Errorf("rows in parallel:\n%s\nwant as one at a time:\n%s", got, want)
	}
	for i := range par {
		p, s := par[i], serial[i]
		if p.Name != s.Name || p.Outcome != s.Outcome || p.Detected != s.Detected || p.Outcome != Pass {
			t.Errorf("cell %d: parallel %s %s detected %d, serial %s %s detected %d", i, p.Name, p.Outcome, p.Detected, s.Name, s.Outcome, s.Detected)
		}
		if p.MedianToFirst == nil || *p.MedianToFirst != 2*time.Second {
			t.Errorf("%s: median to first %v, want 2s (seeds 1, 2: first violations 1s and 2s after the first op)", p.Name, p.MedianToFirst)
		}
		for k := range p.Attempts {
			if p.Attempts[k].Seed != s.Attempts[k].Seed {
				t.Errorf("%s attempt %d: seed %d, serial %d", p.Name, k, p.Attempts[k].Seed, s.Attempts[k].Seed)
			}
		}
	}
	b, err := json.Marshal(par)
	if err != nil || !strings.Contains(string(b), `"to_first_violation_ns":1000000000`) {
		t.Errorf("JSON %s, %v", b, err)
	}
}

// TestFirstViolationsAgainstTheLimit: a cell that stops at its first
// violation is run with its limit, and its rows and its line after the
// repeats give each first violation, their median and 95th percentile,
// and the limit.
func TestFirstViolationsAgainstTheLimit(t *testing.T) {
	rs, table, dir := runFake(t, 1, 3, "10ms")
	b, err := os.ReadFile(filepath.Join(dir, "limits"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(b)); len(got) != 6 || got[1] != "2m0s" {
		t.Errorf("the runs' time limits: %q, want the stop limit 2m0s for each of 3", b)
	}
	for _, want := range []string{"1.0s (limit 120s)", "3.0s (limit 120s)",
		"detected 3/3, first violation after the first client op: median 2.0s, p95 3.0s (limit 120s): pass"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if r := rs[0]; r.Limit != DefaultLimit || r.P95ToFirst == nil || *r.P95ToFirst != 3*time.Second {
		t.Errorf("result: limit %v, p95 %v; want 2m, 3s", r.Limit, r.P95ToFirst)
	}
}

// TestUnconfirmedStopIsUnknown: a run stopped at a first violation that
// its full check does not confirm is incomplete and found nothing: the
// attempt is unknown, not wrong, and says why.
func TestUnconfirmedStopIsUnknown(t *testing.T) {
	rs, table, _ := runFake(t, 1, 1, "10ms+unconfirmed")
	a := rs[0].Attempts[0]
	if a.Outcome != Unknown || !a.Stopped || !strings.Contains(a.Detail, "does not confirm") {
		t.Errorf("attempt %s stopped %v %q; want unknown, stopped, saying the stop was not confirmed\n%s", a.Outcome, a.Stopped, a.Detail, table)
	}
}

// TestFailFastSkipsTheRest: with FailFast, once a cell is judged other
// than pass no further cell starts, the rest of a cell already started
// still runs, and the cells left out are skipped saying why; without it
// every cell runs.
func TestFailFastSkipsTheRest(t *testing.T) {
	cells := []string{"10ms", "10ms+unconfirmed", "10ms", "20ms"}
	rs, table, dir := runFakeWith(t, Options{Repeat: 2, FailFast: true}, cells...)
	want := []Outcome{Pass, Unknown, Skipped, Skipped}
	for i, r := range rs {
		if i >= len(want) || r.Outcome != want[i] {
			t.Fatalf("cell %d: %s, want %v in order\n%s", i, r.Outcome, want, table)
		}
	}
	if got := len(readSpans(t, dir)); got != 4 {
		t.Errorf("%d runs, want 4 (both attempts of each of the first two cells)", got)
	}
	for _, r := range rs[2:] {
		if r.SkippedBecause != "not run: "+setting.Name("FailFast")+", 10ms+unconfirmed/none/fencing-off was judged unknown" {
			t.Errorf("%s skipped because %q; want the fail-fast and the cell that stopped it", r.Name, r.SkippedBecause)
		}
	}
	if !strings.Contains(table, "skipped: not run: "+setting.Name("FailFast")) {
		t.Errorf("the table does not show the skipped cells:\n%s", table)
	}
	all, _, dir := runFakeWith(t, Options{Repeat: 1}, cells...)
	if got := len(readSpans(t, dir)); got != len(cells) || all[3].Outcome != Pass {
		t.Errorf("without FailFast: %d runs, the last cell %s; want every cell run", got, all[3].Outcome)
	}
}
