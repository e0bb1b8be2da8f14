package plots

import (
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/testkit/synth"
)

func TestBinWidth(t *testing.T) {
	for _, c := range []struct {
		end  time.Duration
		max  int
		want time.Duration
	}{
		{60 * time.Second, MaxBins, time.Second},
		{599 * time.Second, MaxBins, time.Second},
		{600 * time.Second, MaxBins, 2 * time.Second},
		{1667 * time.Second, MaxBins, 5 * time.Second},
		{time.Hour, MaxBins, 10 * time.Second},
		{1667 * time.Second, MaxDensityCols, 10 * time.Second},
		{1000 * time.Hour, MaxBins, 2 * time.Hour},
	} {
		w := binWidth(int64(c.end), c.max)
		if time.Duration(w) != c.want || binsOf(int64(c.end), w) > c.max {
			t.Errorf("%v in at most %d bins: %v (%d bins), want %v", c.end, c.max, time.Duration(w), binsOf(int64(c.end), w), c.want)
		}
	}
}

func TestOneByOne(t *testing.T) {
	for _, c := range []struct {
		sizes []int
		want  string
	}{
		{[]int{3, 1, 1}, "yyy"},
		{[]int{99_730, 125, 166}, "nyy"},
		{[]int{4000, 800, 300}, "nyy"},
		{[]int{2500, 2499, 1}, "yyy"},
		{[]int{2500, 2500, 1}, "yny"},
		{[]int{6000}, "n"},
	} {
		got := ""
		for _, one := range oneByOne(c.sizes, 5000) {
			got += map[bool]string{true: "y", false: "n"}[one]
		}
		if got != c.want {
			t.Errorf("%v: %s, want %s", c.sizes, got, c.want)
		}
	}
}

// completions is a history of n ok acquires and fails failed ones, one
// a millisecond, with latencies from 1 to 50 ms.
func completions(n, fails int) []history.Event {
	var h []history.Event
	for i := range n + fails {
		typ := history.OK
		if i >= n {
			typ = history.Fail
		}
		at := int64(i) * 1e6
		h = append(h, history.Event{Time: at, Process: 0, Type: history.Invoke, F: history.FAcquire, Key: "SKU-1"},
			history.Event{Time: at + int64(i%50+1)*1e6, Process: 0, Type: typ, F: history.FAcquire, Key: "SKU-1"})
	}
	return h
}

// circles counts the latency figure's point glyphs (one SVG path each,
// two arcs of the glyph's radius), less the legend's one per series
// drawn as points.
func circles(svg []byte, series int) int {
	return strings.Count(string(svg), "A1.2,1.2 0 1 1")/2 - series
}

// TestLatencyAggregates: up to MaxPoints completions are one element
// each; one more and the largest outcome is binned, the rare one still
// drawn point by point, and the title and the caption say so.
func TestLatencyAggregates(t *testing.T) {
	f := drawn(t, Latency, completions(MaxPoints-1, 1))
	if n := circles(f.SVG, 2); n != MaxPoints {
		t.Errorf("%d completions drawn as %d points", MaxPoints, n)
	}
	if strings.Contains(f.Caption, "bins") || !strings.Contains(f.Caption, "5 000 completions, one point each") {
		t.Errorf("caption below the bound: %q", f.Caption)
	}

	f = drawn(t, Latency, completions(MaxPoints, 3))
	if n := circles(f.SVG, 1); n != 3 {
		t.Errorf("above the bound: %d points drawn, want the 3 fails", n)
	}
	for _, want := range []string{"5 003 completions, more than the 5 000", "5 000 ok are drawn as bins of 1 s", "3 fail one point each"} {
		if !strings.Contains(f.Caption, want) {
			t.Errorf("the caption %q lacks %q", f.Caption, want)
		}
	}
	if s := string(f.SVG); !strings.Contains(s, "5 000 ok drawn as 1 s bins") || !strings.Contains(s, "ok (5 000, density)") {
		t.Error("the figure's title or legend does not say the ok completions are binned")
	}
}

// TestEventsAggregate: a row of more marks than MaxPoints (a resource
// refusing every call) is binned; the rare rows stay marks.
func TestEventsAggregate(t *testing.T) {
	var h []history.Event
	for i := range MaxPoints + 1 {
		at := int64(i) * 1e6
		h = append(h, history.Event{Time: at, Process: 0, Type: history.Invoke, F: history.FWrite, Key: "SKU-1"},
			history.Event{Time: at + 1e5, Process: 0, Type: history.Fail, F: history.FWrite, Key: "SKU-1", Error: "rejected: stale token"})
	}
	exp := history.Event{Time: 7e9, Process: 1, F: history.FSession, Value: &history.Value{State: "expired"}}
	inv := exp
	inv.Type, exp.Type = history.Invoke, history.OK
	h = append(h, inv, exp)
	f := drawn(t, Events, h)
	if !strings.Contains(f.Caption, "5 001 rejected by the resource are drawn as 1 s bins") || !strings.Contains(string(f.SVG), "drawn as 1 s bins") {
		t.Errorf("caption %q", f.Caption)
	}
	if n := strings.Count(string(f.SVG), "<path"); n > 100 {
		t.Errorf("%d SVG paths for one binned row and one mark", n)
	}
}

// TestPerSecondFiguresBin: a run longer than MaxBins seconds is drawn in
// wider bins, and the title and caption name them.
func TestPerSecondFiguresBin(t *testing.T) {
	h := sample()
	h = append(h, ev(1_667_000, 0, history.Invoke, history.FAcquire), ev(1_667_010, 0, history.OK, history.FAcquire),
		ev(1_667_020, 0, history.Invoke, history.FRelease), ev(1_667_030, 0, history.OK, history.FRelease))
	for name, fig := range map[string]func(lockview.View) (Figure, error){"throughput": Throughput, "wait/hold": WaitHold} {
		f := drawn(t, fig, h)
		if !strings.Contains(f.Caption, "per 5 s bin") || !strings.Contains(string(f.SVG), "per 5 s bin") {
			t.Errorf("%s: caption %q", name, f.Caption)
		}
	}
}

// figureBudget is what all figures of the report may weigh together at
// 100 000 operations (the page as a whole must stay under 5 MB).
const figureBudget = 1_500_000

// TestFiguresSize100k: the figures of a synthetic 100 000-operation run
// (internal/testkit/synth, chaos run's defaults: about 28 min and 166 faults;
// and with a 400 ms hold: about 1.5 h and 547 faults) stay within
// figureBudget. A size, not a time.
func TestFiguresSize100k(t *testing.T) {
	if testing.Short() {
		t.Skip("generates two 100k-operation runs")
	}
	for _, s := range []synth.Spec{{Ops: 100_000, Seed: 1}, {Ops: 100_000, Seed: 1, Hold: 400 * time.Millisecond}} {
		r, err := synth.Generate(s)
		if err != nil {
			t.Fatal(err)
		}
		v := lockview.Of(r.Events)
		total := 0
		var sizes []string
		for _, fig := range []func(lockview.View) (Figure, error){Latency, WaitHold, Throughput, Events} {
			f, err := fig(v)
			if err != nil {
				t.Fatal(err)
			}
			total += len(f.SVG)
			sizes = append(sizes, count(len(f.SVG)))
		}
		t.Logf("%s operations over %v: figures %s bytes (latency, wait/hold, throughput, events: %s)",
			count(synth.Ops(r.Events)), time.Duration(v.End).Round(time.Second), count(total), strings.Join(sizes, ", "))
		if total > figureBudget {
			t.Errorf("figures of %s operations: %s bytes, over the budget of %s", count(synth.Ops(r.Events)), count(total), count(figureBudget))
		}
	}
}

// TestDensity: shades grow with the log of the count, from 1 for a lone
// item to densityLevels for the busiest cell, and a row's run of cells
// at one shade is one rectangle: a steady density of 300 bins costs
// one, an alternating one a rectangle per bin.
func TestDensity(t *testing.T) {
	rects := func(counts func(col int) int) int {
		d := newDensity(colourOK, 1, 300, []float64{0, 1}, 300)
		for col := range 300 {
			for range counts(col) {
				d.add(0, float64(col)+0.5)
			}
		}
		with, without := newFrame(""), newFrame("")
		with.p.Add(d)
		with.p.X.Min, with.p.X.Max, without.p.X.Min, without.p.X.Max = 0, 300, 0, 300
		with.height, without.height = 2*vg.Inch, 2*vg.Inch
		a, err := with.svg()
		if err != nil {
			t.Fatal(err)
		}
		b, err := without.svg()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(a), "Z") - strings.Count(string(b), "Z")
	}
	if n := rects(func(int) int { return 5 }); n != 1 {
		t.Errorf("a steady row: %d rectangles, want 1", n)
	}
	if n := rects(func(c int) int { return 1 + 49*(c%2) }); n != 300 {
		t.Errorf("an alternating row: %d rectangles, want 300", n)
	}
	d := newDensity(colourOK, 1, 3, []float64{0, 1}, 3)
	for range 1000 {
		d.add(0, 0)
	}
	d.add(0, 1)
	d.add(0, 3) // the very end: the last column
	if d.level(0) != 0 || d.level(1) != 1 || d.level(1000) != densityLevels || d.level(30) <= d.level(1) || d.cells[0][2] != 1 {
		t.Errorf("levels 0→%d 1→%d 30→%d 1000→%d; cells %v", d.level(0), d.level(1), d.level(30), d.level(1000), d.cells)
	}
}
