package replay

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/runfixture"
	"github.com/zkchaos/zkchaos/run/child"
)

const oneEntry = `{"offset":"1s","fault":"pause-holder","hold":"2s","outcome":"ok"}` + "\n"

// fixture writes a checked lock run (invalid or valid) with a schedule
// of one entry, and returns its folder.
func fixture(t *testing.T, invalid bool) string {
	t.Helper()
	dir := runfixture.Write(t, t.TempDir(), runfixture.Spec{Name: "lock", Start: time.Now(), Invalid: invalid})
	if err := os.WriteFile(filepath.Join(dir, store.ScheduleFile), []byte(oneEntry), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// edit rewrites dir's results.json.
func edit(t *testing.T, dir string, f func(*checker.Results)) {
	t.Helper()
	p := filepath.Join(dir, store.ResultsFile)
	res, err := checker.ReadResults(p)
	if err != nil {
		t.Fatal(err)
	}
	f(&res)
	if err := checker.WriteResults(p, res); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	dir := fixture(t, true)
	o, err := Load(dir)
	if err != nil || o.Valid() || !slices.Equal(o.Kinds, []string{"double-writer"}) || o.Schedule != filepath.Join(dir, store.ScheduleFile) {
		t.Fatalf("an invalid run: %+v, %v; want its kinds (double-writer) and its schedule", o, err)
	}
	if o.ToFirst == nil || *o.ToFirst <= 0 {
		t.Errorf("time to the first violation %v; the fixture's first is at 1.5s", o.ToFirst)
	}
	if o, err := Load(fixture(t, false)); err != nil || !o.Valid() {
		t.Errorf("a valid run: %+v, %v; want it loaded, nothing to reproduce", o, err)
	}
}

// TestLoadRefuses: a run with nothing certain to reproduce is refused
// as such (chaos replay's exit 2); what is no run, or a schedule that
// does not read, as bad input.
func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spoil  func(t *testing.T, dir string)
		cannot bool
		want   string
	}{
		{"never checked", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, store.ResultsFile)) }, true, "never checked"},
		{"unknown", func(t *testing.T, dir string) {
			edit(t, dir, func(r *checker.Results) { r.Valid, r.Reasons = checker.Unknown, []string{"register: over its budget"} })
		}, true, "its verdict is unknown, not a violation: register: over its budget"},
		{"incomplete", func(t *testing.T, dir string) {
			edit(t, dir, func(r *checker.Results) {
				r.Completion = &checker.Completion{Phase: "workload", Why: "the controller stopped in phase \"workload\""}
			})
		}, true, "the run is incomplete (the controller stopped"},
		{"no schedule", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, store.ScheduleFile)) }, true, "no schedule.json"},
		{"bad schedule", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, store.ScheduleFile), []byte(oneEntry+`{"offset":"0s","fault":"pause-holder","hold":"2s"}`+"\n"), 0o644)
		}, false, "line 2: offsets out of order"},
		{"no test.json", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, store.TestFile)) }, false, "is not a run folder"},
		{"no history", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, store.HistoryFile)) }, false, "is not a run folder: no history.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixture(t, true)
			tc.spoil(t, dir)
			_, err := Load(dir)
			if err == nil || errors.Is(err, ErrCannotReplay) != tc.cannot || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v; want %q (cannot replay: %v)", err, tc.want, tc.cannot)
			}
		})
	}
	stopped := fixture(t, true)
	edit(t, stopped, func(r *checker.Results) { r.Completion = &checker.Completion{StoppedAtFirst: true} })
	if _, err := Load(stopped); err != nil {
		t.Errorf("a run stopped at its first violation is replayable: %v", err)
	}
}

// TestRunRefusesAScheduleOfAnotherRun: a schedule to follow that does
// not sit with the original would run without its settings.
func TestRunRefusesAScheduleOfAnotherRun(t *testing.T) {
	o, err := Load(fixture(t, true))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(other, []byte(oneEntry), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Run(t.Context(), o, Options{Exe: "/nonexistent", Repeat: 1, Results: t.TempDir(), Schedule: other})
	if err == nil || !strings.Contains(err.Error(), "the original's settings would not apply") || r == nil || len(r.Replays) != 0 {
		t.Errorf("%+v, %v; want a refusal and no replay", r, err)
	}
}

func TestResultExit(t *testing.T) {
	for _, tc := range []struct {
		exits []int
		want  int
	}{{nil, 0}, {[]int{0, 0}, 0}, {[]int{0, 2}, 2}, {[]int{2, 1, 0}, 1}, {[]int{1, 255}, 255}, {[]int{1, 3}, 255}} {
		r := &Result{}
		for _, e := range tc.exits {
			r.Replays = append(r.Replays, Replay{Exit: e})
		}
		if got := r.Exit(); got != tc.want {
			t.Errorf("exits %v: %d, want %d", tc.exits, got, tc.want)
		}
	}
}

// TestJudge: a replay reproduces when it shows every kind looked for;
// one without a verdict says why.
func TestJudge(t *testing.T) {
	dir := fixture(t, true)
	rp := judge(child.Result{Dir: dir, Exit: 1}, []string{"double-writer"})
	if !rp.Reproduced || rp.ToFirst == nil || !slices.Equal(rp.Kinds, []string{"double-writer"}) {
		t.Errorf("%+v; want reproduced, with its time to the first violation", rp)
	}
	if rp := judge(child.Result{Dir: dir, Exit: 1}, []string{"double-writer", "register"}); rp.Reproduced {
		t.Errorf("%+v; want not reproduced: no register violation", rp)
	}
	if rp := judge(child.Result{Dir: fixture(t, false), Exit: 0}, []string{"double-writer"}); rp.Reproduced || len(rp.Kinds) != 0 ||
		!strings.HasPrefix(rp.String(), "not reproduced (no violation; exit 0") {
		t.Errorf("a valid replay: %+v (%s)", rp, rp)
	}
	os.Remove(filepath.Join(dir, store.ResultsFile))
	if rp := judge(child.Result{Dir: dir, Exit: 255}, []string{"double-writer"}); rp.Reproduced || !strings.Contains(rp.Detail, "no verdict (exit 255)") {
		t.Errorf("a replay without results: %+v", rp)
	}
}

// TestDecided: with Need set, the replays stop once Need reproduced or
// Need can no longer be reached; without it, all Repeat run.
func TestDecided(t *testing.T) {
	for _, tc := range []struct {
		need, repeat, ran, reproduced int
		want                          bool
	}{
		{0, 3, 2, 2, false}, {2, 3, 1, 1, false}, {2, 3, 2, 2, true}, {2, 3, 2, 0, true},
		{2, 3, 2, 1, false}, {1, 1, 0, 0, false}, {3, 3, 1, 0, true}, {1, 3, 2, 0, false},
	} {
		r := &Result{Need: tc.need, Repeat: tc.repeat, Reproduced: tc.reproduced, Replays: make([]Replay, tc.ran)}
		if got := r.Decided(); got != tc.want {
			t.Errorf("need %d of %d, %d of %d ran reproduced: decided %v, want %v", tc.need, tc.repeat, tc.reproduced, tc.ran, got, tc.want)
		}
	}
}
