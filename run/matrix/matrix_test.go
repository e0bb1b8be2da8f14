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
		if got := Summary(&sb, tc.rs); got != tc.want {
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
	if err := WriteJUnit(p, "gate", rs); err != nil {
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

// TestStopsAtFirst: exactly the cells that expect only violations an
// online check sees stop at their first violation and pass
// --stop-at-first: those expecting an invalid double-writer and nothing
// else, and since grant-overlap and token-order have online versions of
// the history (docs/measurements.md "Streaming checkers"), the six zoo
// cells named here.
func TestStopsAtFirst(t *testing.T) {
	history := map[string]bool{
		"seed/rogue-client/fencing-on/acl-off":     true, // grant-overlap
		"assume-on-watch/none/fencing-on":          true, // grant-overlap
		"ignore-session/pause-holder/fencing-on":   true, // grant-overlap
		"release-smallest/pause-holder/fencing-on": true, // grant-overlap
		"random-token/none/fencing-on":             true, // token-order
		"clock-token/none/fencing-on":              true, // token-order
	}
	n, seen := 0, 0
	for _, c := range Default("/bin/chaos") {
		want := len(c.Expect) == 1 && c.Expect[fence.NameDoubleWriter] == checker.Invalid || history[c.Name()]
		if history[c.Name()] {
			seen++
		}
		args := strings.Join(c.RunArgs(1), " ")
		if c.StopsAtFirst() != want || strings.Contains(args, "--stop-at-first") != want {
			t.Errorf("%s (expects %s): stops at first %v, args %q; want %v", c.Name(), c.ExpectString(), c.StopsAtFirst(), args, want)
		}
		if want {
			n++
			// It stops only at a gating checker's violation: the gate is
			// what it expects to fail.
			if g := "--gate " + strings.Join(slices.Sorted(maps.Keys(c.Expect)), ","); !strings.Contains(args, g) {
				t.Errorf("%s: args %q lack %q", c.Name(), args, g)
			}
		}
	}
	if n == 0 || seen != len(history) {
		t.Errorf("%d cells stop at their first violation, %d of the %d named here are in the matrix", n, seen, len(history))
	}
	mixed := Cell{Expect: map[string]checker.Validity{fence.NameDoubleWriter: checker.Invalid, lock.NameLiveness: checker.Invalid}}
	if mixed.StopsAtFirst() {
		t.Error("a cell that also expects a violation no online check sees must run its time")
	}
	online := Cell{Expect: map[string]checker.Validity{fence.NameWrongToken: checker.Invalid, lock.NameGrantOverlap: checker.Invalid}}
	if !online.StopsAtFirst() {
		t.Error("a cell expecting only violations the history's online checks see must stop at its first")
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
	if code := Summary(&sum, rs); code != 0 || !strings.Contains(sum.String(), "1 skipped") ||
		!strings.Contains(sum.String(), "skipped: no Docker engine") {
		t.Errorf("summary exit %d:\n%s", code, sum.String())
	}
	if !strings.Contains(table.String(), "skipped: no Docker engine") {
		t.Errorf("table:\n%s", table.String())
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := WriteJUnit(path, "test-all", rs); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `skipped="1"`) || !strings.Contains(string(b), `<skipped message="no Docker engine on this machine"`) {
		t.Errorf("junit:\n%s", b)
	}
}

// TestIndex: the test-all page has a row per cell with its outcome and
// detection rate, links each run's report relative to the page, and
// escapes what it shows.
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
		{Cell: zoo, Name: zoo.Name(), Outcome: Pass, Detected: 1, MedianFirst: &first, Attempts: []Attempt{
			{Seed: 1, Outcome: Pass, Elapsed: 30 * time.Second, FirstBug: &first, Dir: filepath.Join(dir, "cell-a", "run-1"),
				Actual: map[string]checker.Validity{}}}},
		{Cell: zoo, Name: "<b>hostile</b>", Outcome: Wrong, Attempts: []Attempt{{Seed: 2, Outcome: Wrong}}},
	}
	p := filepath.Join(dir, "index.html")
	if err := WriteIndex(p, "gate", rs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`href="cell-a/run-1/report.html"`, "1/1", "2.5s", "1 of 2 cells as expected", "<title>zkchaos gate: 1 of 2", "<h1>zkchaos gate</h1>", `class="wrong"`, "&lt;b&gt;hostile"} {
		if !strings.Contains(s, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if strings.Contains(s, "<b>hostile") || strings.Contains(s, "http") {
		t.Error("index shows markup or names a URL")
	}
}
