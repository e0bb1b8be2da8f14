package matrix

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
)

// TestReproductionInEveryReport: a cell not as expected names the
// command that replays its failing run (absolute binary, absolute
// folder, quoted when needed) in the summary line, the JUnit failure
// message and the index row; a run that made no folder says there is
// nothing to replay; a cell as expected names none.
func TestReproductionInEveryReport(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the folders below are relative, as with --results results
	c := Cell{Recipe: "seed", Nemesis: []string{"pause-holder"}, Fencing: "on", Expect: valid(fence.NameDoubleWriter)}
	bad := map[string]checker.Validity{fence.NameDoubleWriter: checker.Invalid}
	rs := []CellResult{
		{Cell: c, Name: "ok", Outcome: Pass, Attempts: []Attempt{{Seed: 1, Outcome: Pass, Dir: "results/ok/run-1"}}},
		{Cell: c, Name: "wrong", Outcome: Wrong, Attempts: []Attempt{
			{Seed: 1, Outcome: Pass, Dir: "results/wrong/run-1"},
			{Seed: 2, Outcome: Unknown, Dir: "results/wrong/run-2"},
			{Seed: 3, Outcome: Wrong, Dir: "results/wrong/run-3", Exit: 1, Actual: bad}}},
		{Cell: c, Name: "unknown", Outcome: Unknown, Attempts: []Attempt{{Seed: 1, Outcome: Unknown, Dir: "results/it's here"}}},
		{Cell: c, Name: "refused", Outcome: Error, Attempts: []Attempt{{Seed: 4, Outcome: Error, Detail: "no run folder"}}},
	}
	want := map[string]string{
		"wrong": "reproduce: /opt/zk/chaos replay " + filepath.Join(dir, "results/wrong/run-3") +
			"; shrink: /opt/zk/chaos shrink " + filepath.Join(dir, "results/wrong/run-3"),
		"unknown": "reproduce: /opt/zk/chaos replay '" + filepath.Join(dir, "results/it") + `'\''s here'`,
		"refused": "nothing to replay: the run of seed 4 made no folder",
	}
	for _, r := range rs {
		if got := Reproduction("/opt/zk/chaos", r); got != want[r.Name] {
			t.Errorf("%s: %q, want %q", r.Name, got, want[r.Name])
		}
	}
	if got := Reproduction("", rs[1]); !strings.HasPrefix(got, "reproduce: chaos replay /") {
		t.Errorf("with no binary known: %q, want chaos replay and the folder", got)
	}

	var sum strings.Builder
	Summary(&sum, "/opt/zk/chaos", rs)
	for _, name := range []string{"wrong", "unknown", "refused"} {
		if !strings.Contains(sum.String(), "  "+name+": "+string(rs[indexOf(rs, name)].Outcome)) ||
			!strings.Contains(lineOf(sum.String(), "  "+name+": "), want[name]) {
			t.Errorf("summary line of %s lacks %q:\n%s", name, want[name], sum.String())
		}
	}

	p := filepath.Join(dir, "junit.xml")
	if err := WriteJUnit(p, "gate", "/opt/zk/chaos", rs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, tc := range got.Suites[0].Cases {
		m := tc.Failure
		if tc.Error != nil {
			m = tc.Error
		}
		switch {
		case want[tc.Name] == "" && m != nil:
			t.Errorf("junit case %s failed: %+v", tc.Name, m)
		case want[tc.Name] != "" && (m == nil || !strings.HasSuffix(m.Message, "; "+want[tc.Name])):
			t.Errorf("junit case %s: message %+v, want it to end with %q", tc.Name, m, want[tc.Name])
		}
	}

	p = filepath.Join(dir, "index.html")
	if err := WriteIndex(p, "gate", "/opt/zk/chaos", rs); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, name := range []string{"wrong", "refused"} {
		if !strings.Contains(page, "<code>"+want[name]+"</code>") {
			t.Errorf("index lacks %q", want[name])
		}
	}
	if strings.Count(page, "<code>") != 3 {
		t.Errorf("index shows %d commands, want 3 (none for the cell as expected)", strings.Count(page, "<code>"))
	}
}

func indexOf(rs []CellResult, name string) int {
	for i, r := range rs {
		if r.Name == name {
			return i
		}
	}
	return -1
}

// lineOf is the first line of s that starts with prefix.
func lineOf(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestToShrink: gate --shrink takes the first cell judged wrong that
// expected the subject valid, at its first attempt whose run was invalid;
// a cell that missed an expected violation, or whose violation no gating
// checker found, has nothing to shrink.
func TestToShrink(t *testing.T) {
	bad := map[string]checker.Validity{fence.NameDoubleWriter: checker.Invalid}
	fine := Cell{Recipe: "seed", Nemesis: []string{"pause-holder"}, Fencing: "on", Expect: valid(fence.NameDoubleWriter)}
	caught := fine
	caught.Fencing, caught.Expect = "off", map[string]checker.Validity{fence.NameDoubleWriter: checker.Invalid}
	rs := []CellResult{
		{Cell: caught, Name: "missed", Outcome: Wrong, Attempts: []Attempt{{Seed: 1, Outcome: Wrong, Dir: "r/missed"}}},
		{Cell: fine, Name: "unknown", Outcome: Unknown, Attempts: []Attempt{{Seed: 1, Outcome: Unknown, Dir: "r/unknown", Exit: 2}}},
		{Cell: fine, Name: "ungated", Outcome: Wrong, Attempts: []Attempt{{Seed: 1, Outcome: Wrong, Dir: "r/ungated", Actual: bad}}},
		{Cell: fine, Name: "wrong", Outcome: Wrong, Attempts: []Attempt{
			{Seed: 1, Outcome: Pass, Dir: "r/wrong-1"}, {Seed: 2, Outcome: Wrong, Dir: "r/wrong-2", Exit: 1, Actual: bad}}},
		{Cell: fine, Name: "later", Outcome: Wrong, Attempts: []Attempt{{Seed: 1, Outcome: Wrong, Dir: "r/later", Exit: 1}}},
	}
	if dir, ok := ToShrink(rs); !ok || dir != "r/wrong-2" {
		t.Errorf("ToShrink: %q, %v; want r/wrong-2", dir, ok)
	}
	if dir, ok := ToShrink(rs[:3]); ok {
		t.Errorf("ToShrink of a missed violation, an unknown cell and a violation outside the gate (exit 0): %q; want none", dir)
	}
	if got := Reproduction("/c", rs[0]); strings.Contains(got, "; shrink:") {
		t.Errorf("a run with no violation: %q; want no shrink line", got)
	}
}
