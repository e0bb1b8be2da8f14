package matrix

import (
	"context"
	"encoding/xml"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/checker/lock"
)

func TestFilter(t *testing.T) {
	cells := Default("chaos")
	got, err := Filter(cells, []string{"seed/pause-holder"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.Recipe != "seed" || c.Nemesis[0] != "pause-holder" {
			t.Errorf("glob kept %s", c.Name())
		}
	}
	if len(got) == 0 {
		t.Fatal("glob kept nothing")
	}
	herd, err := Filter(cells, []string{"herd/*"})
	if err != nil || len(herd) != 1 || herd[0].Recipe != "herd" {
		t.Errorf("herd/* kept %v (%v), want the one herd cell", herd, err)
	}
	if _, err := Filter(cells, []string{"no-such-recipe"}); err == nil {
		t.Error("a filter matching nothing must be an error, not an empty (green) matrix")
	}
	if _, err := Filter(cells, []string{"["}); err == nil {
		t.Error("a malformed glob must be an error")
	}
	all, _ := Filter(cells, nil)
	if len(all) != len(cells) {
		t.Error("no filter must keep every cell")
	}
	// The local lock cells: everything less the other workloads and the
	// docker backend.
	local, err := Filter(cells, []string{"!config:", "!election:", "!/docker"})
	if err != nil || len(local) == 0 {
		t.Fatalf("exclusions only: %v", err)
	}
	for _, c := range local {
		if c.Workload != "" || c.Cluster != "" {
			t.Errorf("excluded %s kept", c.Name())
		}
	}
	if on, _ := Filter(cells, []string{"seed/pause-holder", "!/docker", "!fencing-off", "!short-session", "!/postgres"}); len(on) != 1 || on[0].Name() != "seed/pause-holder/fencing-on" {
		t.Errorf("a pattern less exclusions kept %v", on)
	}
	if _, err := Filter(cells, []string{"!"}); err == nil {
		t.Error("excluding everything must be an error")
	}
}

func TestCompare(t *testing.T) {
	c := Cell{Expect: map[string]checker.Validity{"double-writer": checker.Invalid}}
	cases := []struct {
		actual map[string]checker.Validity
		want   Outcome
	}{
		{map[string]checker.Validity{"double-writer": checker.Invalid}, Pass},
		{map[string]checker.Validity{"double-writer": checker.Valid}, Wrong},
		{map[string]checker.Validity{"double-writer": checker.Unknown}, Unknown},
		{map[string]checker.Validity{}, Unknown},
	}
	for _, tc := range cases {
		if got := compare(c, tc.actual); got != tc.want {
			t.Errorf("compare(%v) = %s, want %s", tc.actual, got, tc.want)
		}
	}
}

func TestJudgeRatesAndMedian(t *testing.T) {
	c := Cell{Recipe: "r", Nemesis: []string{"n"}, Fencing: "off",
		Expect: map[string]checker.Validity{"double-writer": checker.Invalid}}
	d := func(s int) *time.Duration { x := time.Duration(s) * time.Second; return &x }
	mk := func(v checker.Validity, first *time.Duration) Attempt {
		a := Attempt{Actual: map[string]checker.Validity{"double-writer": v}, FirstBug: first}
		a.Outcome = compare(c, a.Actual)
		return a
	}
	cr := CellResult{Cell: c, Attempts: []Attempt{
		mk(checker.Invalid, d(10)), mk(checker.Invalid, d(30)), mk(checker.Invalid, d(20)), mk(checker.Valid, nil),
	}}
	judge(&cr, 0.75)
	if cr.Outcome != Pass || cr.Detected != 3 {
		t.Errorf("3 of 4 detected at pass-rate 0.75: outcome %s detected %d", cr.Outcome, cr.Detected)
	}
	if cr.MedianFirst == nil || *cr.MedianFirst != 20*time.Second {
		t.Errorf("median first violation %v, want 20s", cr.MedianFirst)
	}
	cr2 := CellResult{Cell: c, Attempts: cr.Attempts}
	judge(&cr2, 1)
	if cr2.Outcome != Wrong {
		t.Errorf("3 of 4 at pass-rate 1: %s, want wrong", cr2.Outcome)
	}
}

func TestSummaryExitCodes(t *testing.T) {
	var sb strings.Builder
	mk := func(o Outcome) CellResult { return CellResult{Name: string(o), Outcome: o} }
	cases := []struct {
		rs   []CellResult
		want int
	}{
		{[]CellResult{mk(Pass), mk(Pass)}, 0},
		{[]CellResult{mk(Pass), mk(Unknown)}, 2},
		{[]CellResult{mk(Unknown), mk(Wrong)}, 1},
		{[]CellResult{mk(Wrong), mk(Error)}, 255},
	}
	for _, tc := range cases {
		if got := Summary(&sb, "", tc.rs); got != tc.want {
			t.Errorf("Summary(%v) = %d, want %d", tc.rs, got, tc.want)
		}
	}
}

func TestJUnit(t *testing.T) {
	c := Default("chaos")[2]
	rs := []CellResult{
		{Cell: c, Name: c.Name(), Outcome: Pass, Attempts: []Attempt{{Seed: 1, Outcome: Pass, Elapsed: time.Second}}},
		{Cell: c, Name: c.Name() + "-2", Outcome: Wrong, Attempts: []Attempt{{Seed: 2, Outcome: Wrong, Elapsed: time.Second}}},
		{Cell: c, Name: c.Name() + "-3", Outcome: Error, Attempts: []Attempt{{Seed: 3, Outcome: Error, Detail: "boom <&>"}}},
	}
	p := filepath.Join(t.TempDir(), "junit.xml")
	if err := WriteJUnit(p, "gate", "", rs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatalf("junit is not XML: %v", err)
	}
	s := got.Suites[0]
	if s.Tests != 3 || s.Failures != 1 || s.Errors != 1 || s.Name != "zkchaos gate" {
		t.Errorf("suite %q tests=%d failures=%d errors=%d, want zkchaos gate, 3 1 1", s.Name, s.Tests, s.Failures, s.Errors)
	}
	if s.Cases[1].Failure == nil || s.Cases[0].Failure != nil {
		t.Errorf("failure elements wrong: %+v", s.Cases)
	}
}

// TestMissedViolationsSaySo: a cell that stops at its first violation
// and missed it in some attempts says, in the summary and the JUnit file,
// in how many and within which limit; its first violations there carry
// the limit.
func TestMissedViolationsSaySo(t *testing.T) {
	c := Cell{Recipe: "seed", Nemesis: []string{"expire-holder"}, Fencing: "off", Expect: invalid(fence.NameDoubleWriter)}
	four := 4 * time.Second
	found := Attempt{Seed: 1, Outcome: Pass, ToFirst: &four, Actual: map[string]checker.Validity{fence.NameDoubleWriter: checker.Invalid}}
	miss := Attempt{Seed: 2, Outcome: Wrong, Actual: map[string]checker.Validity{fence.NameDoubleWriter: checker.Valid}}
	cr := CellResult{Cell: c, Name: c.Name(), Attempts: []Attempt{found, miss}}
	judge(&cr, 1)
	if cr.Outcome != Wrong || cr.Limit != DefaultLimit || cr.MedianToFirst == nil || *cr.MedianToFirst != four {
		t.Fatalf("judged %s, limit %v, median %v; want wrong, 2m, 4s", cr.Outcome, cr.Limit, cr.MedianToFirst)
	}
	var sum strings.Builder
	Summary(&sum, "", []CellResult{cr})
	if want := "seed/expire-holder/fencing-off: wrong (expected double-writer=false): no violation in 120s in 1 of 2 runs"; !strings.Contains(sum.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, sum.String())
	}
	p := filepath.Join(t.TempDir(), "junit.xml")
	if err := WriteJUnit(p, "test-all", "", []CellResult{cr}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	for _, want := range []string{"detected 1/2, first violation after the first client op: median 4.0s, p95 4.0s (limit 120s)",
		"no violation in 120s in 1 of 2 runs", "first violation 4.0s (limit 120s)", "first violation none in 120s"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("junit lacks %q:\n%s", want, b)
		}
	}
}

func TestCellNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Default("/usr/bin/chaos") {
		if seen[c.Name()] {
			t.Errorf("two cells named %s: --cells and the results folder could not tell them apart", c.Name())
		}
		seen[c.Name()] = true
		if len(c.Expect) == 0 {
			t.Errorf("cell %s expects nothing: it could never fail", c.Name())
		}
	}
}

// A cell whose run did not complete, or whose history failed its
// integrity check, is unknown even when every expected checker agreed. A
// run stopped at its first violation is judged only for a cell that asks
// for that stop.
func TestTrusted(t *testing.T) {
	done := &checker.Completion{Completed: true}
	first := &checker.Completion{StoppedAtFirst: true, Why: "stopped at its first violation (double-writer)"}
	ok := map[string]checker.Result{integrity.Name: {Valid: checker.Valid}}
	stops := Cell{Expect: invalid(fence.NameDoubleWriter)}
	cases := []struct {
		name string
		cell Cell
		res  checker.Results
		want Outcome
	}{
		{"stopped at first", stops, checker.Results{Completion: first, Checkers: ok}, Pass},
		{"stopped at first, broken history", stops, checker.Results{Completion: first,
			Checkers: map[string]checker.Result{integrity.Name: {Valid: checker.Unknown, Error: "duplicate index"}}}, Unknown},
		{"stopped at first, a cell that runs its time", Cell{Expect: valid(fence.NameDoubleWriter)},
			checker.Results{Completion: first, Checkers: ok}, Unknown},
		{"complete and intact", stops, checker.Results{Completion: done, Checkers: ok}, Pass},
		{"no completion record", stops, checker.Results{Checkers: ok}, Unknown},
		{"incomplete", stops, checker.Results{Completion: &checker.Completion{Why: "killed"}, Checkers: ok}, Unknown},
		{"broken history", stops, checker.Results{Completion: done,
			Checkers: map[string]checker.Result{integrity.Name: {Valid: checker.Unknown, Error: "duplicate index"}}}, Unknown},
		{"no integrity result", stops, checker.Results{Completion: done, Checkers: map[string]checker.Result{}}, Unknown},
	}
	for _, c := range cases {
		if got, why := trusted(c.cell, c.res); got != c.want || (got != Pass && why == "") {
			t.Errorf("%s: trusted = %s %q, want %s with a reason", c.name, got, why, c.want)
		}
	}
}

// TestStopsAtFirst: every cell that expects only violations stops at its
// first one, gated on what it expects, with the limit as its last time
// limit (over the time its Args give), except those whose violation only
// a whole run shows: the herd measures and config-convergence (named
// here), and the comparison's cells, which also expect the stats of a
// whole run. Cells that expect a valid verdict run their time.
func TestStopsAtFirst(t *testing.T) {
	whole := map[string]bool{
		"herd/none/fencing-on":              true, // herd: wake-ups per acquire over the run
		"election:herd/none/fencing-on":     true, // the same, on the campaigns
		"config:no-rewatch/none/fencing-on": true, // config-convergence: the final version
	}
	n, seen := 0, 0
	for _, c := range Default("/bin/chaos") {
		onlyInvalid := c.ExpectsViolation()
		for _, v := range c.Expect {
			onlyInvalid = onlyInvalid && v == checker.Invalid
		}
		if whole[c.Name()] {
			seen++
		}
		want := onlyInvalid && !whole[c.Name()]
		args := c.RunArgs(1)
		joined := strings.Join(args, " ")
		// A cell that expects only violations gates on them, whether
		// it stops at the first or runs its time: the run's verdict is
		// the cell's, for chaos replay and chaos shrink.
		g := "--gate " + strings.Join(slices.Sorted(maps.Keys(c.Expect)), ",")
		if onlyInvalid != strings.Contains(joined, g) {
			t.Errorf("%s (expects %s): args %q; want %q exactly when it expects only violations", c.Name(), c.ExpectString(), joined, g)
		}
		if c.StopsAtFirst() != want || strings.Contains(joined, "--stop-at-first") != want {
			t.Errorf("%s (expects %s): stops at first %v, args %q; want %v", c.Name(), c.ExpectString(), c.StopsAtFirst(), joined, want)
		}
		if !want {
			if c.StopLimit() != 0 {
				t.Errorf("%s runs its time but has a stop limit %v", c.Name(), c.StopLimit())
			}
			continue
		}
		n++
		lim := DefaultLimit
		if c.Limit != 0 {
			lim = c.Limit // CURATOR-696's
		}
		if tail := strings.Join(args[len(args)-2:], " "); tail != "--time-limit "+lim.String() || c.StopLimit() != lim {
			t.Errorf("%s: args end %q, stop limit %v; want --time-limit %s last", c.Name(), tail, c.StopLimit(), lim)
		}
	}
	if n < 20 || seen != len(whole) {
		t.Errorf("%d cells stop at their first violation, %d of the %d named here are in the matrix", n, seen, len(whole))
	}
	c := Cell{Expect: invalid(fence.NameDoubleWriter), Limit: 30 * time.Second}
	if args := c.RunArgs(1); strings.Join(args[len(args)-2:], " ") != "--time-limit 30s" {
		t.Errorf("a cell's own limit: args %v", args)
	}
	mixed := Cell{Expect: map[string]checker.Validity{fence.NameDoubleWriter: checker.Invalid, lock.NameHerd: checker.Invalid}}
	if mixed.StopsAtFirst() {
		t.Error("a cell that also expects a violation only a whole run shows must run its time")
	}
	online := Cell{Expect: map[string]checker.Validity{fence.NameWrongToken: checker.Invalid, lock.NameLiveness: checker.Invalid}}
	if !online.StopsAtFirst() {
		t.Error("a cell expecting only violations an online check or a check of the run so far finds must stop at its first")
	}
	unknown := Cell{Workload: "no-such-workload", Expect: invalid(fence.NameDoubleWriter)}
	if unknown.StopsAtFirst() {
		t.Error("a cell of an unknown workload stops at its first violation")
	}
}

// TestSkippedCellIsReportedNotPassed: a cell whose backend is missing is
// not run, is named as skipped with why in the table, the summary and the
// JUnit file, and neither passes nor fails the matrix.
func TestSkippedCellIsReportedNotPassed(t *testing.T) {
	cell := Cell{Recipe: "seed", Nemesis: []string{"pause-holder"}, Fencing: "on", Cluster: "docker",
		Expect: valid(resource...)}
	if got := cell.Name(); got != "seed/pause-holder/fencing-on/docker" {
		t.Errorf("name %q", got)
	}
	if args := strings.Join(cell.RunArgs(1), " "); !strings.Contains(args, "--cluster docker") {
		t.Errorf("run args %q lack --cluster docker", args)
	}
	var table strings.Builder
	rs, err := Run(context.Background(), []Cell{cell}, Options{Exe: "/nonexistent", Results: t.TempDir(), Out: &table,
		Skip: func(c Cell) string { return "no Docker engine on this machine" }})
	if err != nil || len(rs) != 1 || rs[0].Outcome != Skipped || len(rs[0].Attempts) != 0 {
		t.Fatalf("results %+v, %v; want one skipped cell with no attempts", rs, err)
	}
	var sum strings.Builder
	if code := Summary(&sum, "", rs); code != 0 || !strings.Contains(sum.String(), "1 skipped") ||
		!strings.Contains(sum.String(), "skipped: no Docker engine") {
		t.Errorf("summary exit %d:\n%s", code, sum.String())
	}
	if !strings.Contains(table.String(), "skipped: no Docker engine") {
		t.Errorf("table:\n%s", table.String())
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := WriteJUnit(path, "test-all", "", rs); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `skipped="1"`) || !strings.Contains(string(b), `<skipped message="no Docker engine on this machine"`) {
		t.Errorf("junit:\n%s", b)
	}
}

// TestIndex: the test-all page has a row per cell with its outcome,
// detection rate and first violations against the limit, links each
// run's report relative to the page, and escapes what it shows.
func TestIndex(t *testing.T) {
	dir := t.TempDir()
	var zoo Cell
	for _, c := range Default("chaos") {
		if c.ExpectsViolation() {
			zoo = c
			break
		}
	}
	first := 2500 * time.Millisecond
	rs := []CellResult{
		{Cell: zoo, Name: zoo.Name(), Outcome: Pass, Detected: 1, MedianToFirst: &first, P95ToFirst: &first, Limit: zoo.StopLimit(), Attempts: []Attempt{
			{Seed: 1, Outcome: Pass, Elapsed: 30 * time.Second, ToFirst: &first, Dir: filepath.Join(dir, "cell-a", "run-1"),
				Actual: map[string]checker.Validity{fence.NameDoubleWriter: checker.Invalid}},
			{Seed: 2, Outcome: Wrong, Elapsed: 130 * time.Second, Actual: map[string]checker.Validity{fence.NameDoubleWriter: checker.Valid}}}},
		{Cell: zoo, Name: "<b>hostile</b>", Outcome: Wrong, Attempts: []Attempt{{Seed: 2, Outcome: Wrong}}},
	}
	p := filepath.Join(dir, "index.html")
	if err := WriteIndex(p, "gate", "", rs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`href="cell-a/run-1/report.html"`, "1/2", "median 2.5s, p95 2.5s (limit 120s)", "2.5s (limit 120s)", "none in 120s", "1 of 2 cells as expected", "<title>zkchaos gate: 1 of 2", "<h1>zkchaos gate</h1>", `class="wrong"`, "&lt;b&gt;hostile"} {
		if !strings.Contains(s, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if strings.Contains(s, "<b>hostile") || strings.Contains(s, "http") {
		t.Error("index shows markup or names a URL")
	}
}
