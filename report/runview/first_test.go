package runview_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/runfixture"
	"github.com/zkchaos/zkchaos/report/runview"
)

// TestReadFirst: the time to first violation is the double-writer's
// first violation (1.5 s on the run clock in the fixture) less the first
// client operation (process 0's acquire at 0.5 s; the nemesis' operations
// are not client operations); a valid run has none; a checker not asked
// about is not counted; a history without client operations says so.
func TestReadFirst(t *testing.T) {
	base := t.TempDir()
	bad := runfixture.Write(t, base, runfixture.Spec{Name: "bad", Start: t0, Invalid: true, Fencing: "off"})
	good := runfixture.Write(t, base, runfixture.Spec{Name: "good", Start: t0})
	f, err := runview.ReadFirst(os.DirFS(bad), "double-writer")
	if err != nil || !f.Found || f.FirstOp != 500*time.Millisecond || f.Violation != 1500*time.Millisecond ||
		f.After() != time.Second || f.Checker != "double-writer" {
		t.Errorf("invalid run: %+v, %v", f, err)
	}
	if f, err := runview.ReadFirst(os.DirFS(bad), "register"); err != nil || f.Found {
		t.Errorf("asked about register only: %+v, %v", f, err)
	}
	if f, err := runview.ReadFirst(os.DirFS(good)); err != nil || f.Found || f.FirstOp != 500*time.Millisecond {
		t.Errorf("valid run: %+v, %v", f, err)
	}
	nem := `{"index":0,"time":5,"process":"nemesis","type":"invoke","f":"pause","key":"","value":null,"error":""}` + "\n"
	if err := os.WriteFile(filepath.Join(good, store.HistoryFile), []byte(nem), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runview.ReadFirst(os.DirFS(good)); !errors.Is(err, runview.ErrNoClientOp) {
		t.Errorf("history of the nemesis alone: %v, want ErrNoClientOp", err)
	}
	if _, err := runview.ReadFirst(os.DirFS(t.TempDir())); !errors.Is(err, runview.ErrNotRun) {
		t.Errorf("empty folder: %v, want ErrNotRun", err)
	}
}

func TestMedian(t *testing.T) {
	if runview.Median(nil) != nil {
		t.Error("median of nothing")
	}
	ds := []time.Duration{3, 1, 2, 4}
	if m := runview.Median(ds); m == nil || *m != 3 || ds[0] != 3 {
		t.Errorf("median %v of %v (the upper middle, input unchanged)", m, ds)
	}
}

// TestPercentile: the nearest rank, from one value to twenty.
func TestPercentile(t *testing.T) {
	if runview.Percentile(nil, 95) != nil {
		t.Error("percentile of nothing")
	}
	var twenty []time.Duration
	for i := 20; i >= 1; i-- {
		twenty = append(twenty, time.Duration(i))
	}
	for _, c := range []struct {
		ds   []time.Duration
		p    int
		want time.Duration
	}{
		{[]time.Duration{7}, 95, 7},
		{[]time.Duration{3, 1, 2}, 95, 3},
		{[]time.Duration{3, 1, 2}, 50, 2},
		{twenty, 95, 19},
		{twenty, 100, 20},
		{twenty, 5, 1},
	} {
		if got := runview.Percentile(c.ds, c.p); got == nil || *got != c.want {
			t.Errorf("percentile %d of %v: %v, want %v", c.p, c.ds, got, c.want)
		}
	}
	if twenty[0] != 20 {
		t.Error("the input was changed")
	}
}
