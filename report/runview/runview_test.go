package runview_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/runfixture"
	"github.com/zkchaos/zkchaos/report/runview"
	"github.com/zkchaos/zkchaos/run/runner"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// TestListNewestFirst lists a results folder with runs of several names,
// a test-all matrix with a run inside, a compare page and the latest
// links store makes: every run once, newest first, pages found.
func TestListNewestFirst(t *testing.T) {
	base := t.TempDir()
	runfixture.Write(t, base, runfixture.Spec{Name: "b", Start: t0.Add(time.Hour)})
	runfixture.Write(t, base, runfixture.Spec{Name: "a", Start: t0, Invalid: true, Fencing: "off"})
	runfixture.Write(t, base, runfixture.Spec{Name: "a", Start: t0.Add(2 * time.Hour), Unchecked: true})
	matrix := filepath.Join(base, "test-all", "20261130T120000Z")
	runfixture.Write(t, matrix, runfixture.Spec{Name: "cell-1", Start: t0.Add(30 * time.Minute)})
	for _, p := range []string{filepath.Join(matrix, "index.html"), filepath.Join(base, runview.ComparePrefix+"x-vs-y.html"), filepath.Join(base, "other.html")} {
		if err := os.WriteFile(p, []byte("<!DOCTYPE html>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := runview.List(os.DirFS(base))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range l.Runs {
		got = append(got, e.Config.Name+"@"+e.Config.Start.Format("15:04"))
	}
	want := []string{"a@14:00", "b@13:00", "cell-1@12:30", "a@12:00"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("runs = %v, want %v (newest first, latest links not followed)", got, want)
	}
	if l.Runs[0].Checked || !l.Runs[1].Checked {
		t.Fatalf("checked = %v, %v; want the run without results.json unchecked", l.Runs[0].Checked, l.Runs[1].Checked)
	}
	if l.Runs[3].Results.Valid != checker.Invalid || l.Runs[3].Config.Fencing != "off" || l.Runs[3].Duration() != 20*time.Second {
		t.Fatalf("oldest run read as %+v", l.Runs[3])
	}
	if l.Runs[0].Duration() != 20*time.Second {
		t.Fatalf("unchecked run's duration (from status.json) = %s", l.Runs[0].Duration())
	}
	if len(l.TestAll) != 1 || l.TestAll[0].Path != "test-all/20261130T120000Z/index.html" {
		t.Fatalf("test-all pages = %+v", l.TestAll)
	}
	if len(l.Compares) != 1 || l.Compares[0].Path != runview.ComparePrefix+"x-vs-y.html" {
		t.Fatalf("compare pages = %+v", l.Compares)
	}
}

// TestListKeepsBrokenRuns shows a run whose results.json is damaged with
// the problem instead of leaving it out or failing the listing.
func TestListKeepsBrokenRuns(t *testing.T) {
	base := t.TempDir()
	dir := runfixture.Write(t, base, runfixture.Spec{Name: "a", Start: t0})
	if err := os.WriteFile(filepath.Join(dir, store.ResultsFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := runview.List(os.DirFS(base))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Runs) != 1 || l.Runs[0].Checked || !strings.Contains(l.Runs[0].Problem, store.ResultsFile) {
		t.Fatalf("runs = %+v", l.Runs)
	}
}

func TestLoad(t *testing.T) {
	base := t.TempDir()
	dir := runfixture.Write(t, base, runfixture.Spec{Name: "a", Start: t0, Invalid: true})
	r, err := runview.Load(os.DirFS(dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Evidence.History.Events) != 10 || !r.Evidence.HasStatus || r.Results.Valid != checker.Invalid || r.Config.StartWall != t0.UnixNano() {
		t.Fatalf("loaded %+v", r)
	}
	if _, err := runview.Load(os.DirFS(base), base); !errors.Is(err, runview.ErrNotRun) {
		t.Fatalf("a folder without a history: %v, want ErrNotRun", err)
	}
	unchecked := runfixture.Write(t, base, runfixture.Spec{Name: "u", Start: t0, Unchecked: true})
	if _, err := runview.Load(os.DirFS(unchecked), unchecked); !errors.Is(err, runview.ErrUnchecked) {
		t.Fatalf("a run without results.json: %v, want ErrUnchecked", err)
	}
}

// TestConfigMatchesRunner keeps runview's reading of test.json in step
// with what runner writes: the columns' names, and every duration shown
// as a duration, every other number as a number.
func TestConfigMatchesRunner(t *testing.T) {
	cfg := runner.Config{Name: "n", Recipe: "r", Workload: "w", Nemesis: []string{"x", "y"}, Fencing: "off", TimeLimit: 3 * time.Second, Seed: 9}
	val := reflect.ValueOf(&cfg).Elem()
	for i := range val.NumField() {
		if f := val.Field(i); f.Kind() == reflect.Int64 || f.Kind() == reflect.Int {
			if f.Interface() == reflect.Zero(f.Type()).Interface() {
				f.SetInt(int64(1500+i) * int64(time.Millisecond))
			}
		}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, store.TestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, store.HistoryFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, store.ResultsFile), []byte(`{"valid":true,"checkers":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := runview.Load(os.DirFS(dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Config
	if c.Name != "n" || c.Recipe != "r" || c.Workload != "w" || c.NemesisString() != "x,y" || c.Fencing != "off" || c.TimeLimit != 3*time.Second || c.Seed != 9 {
		t.Fatalf("read %+v from %s", c, b)
	}
	typ := val.Type()
	for i := range typ.NumField() {
		key, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		var want string
		switch f := val.Field(i).Interface().(type) {
		case time.Duration:
			want = f.String()
		case int, int64:
			want = strings.TrimSpace(string(must(json.Marshal(f))))
		default:
			continue
		}
		if got, ok := c.Value(key); !ok || got != want {
			t.Errorf("%s shown as %q, want %q", key, got, want)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
