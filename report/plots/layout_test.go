package plots

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// laidOut builds a figure and places it as svg() does.
func laidOut(t *testing.T, build func(lockview.View) (*frame, error), h []history.Event) (*frame, layout) {
	t.Helper()
	f, err := build(lockview.Of(h))
	if err != nil {
		t.Fatal(err)
	}
	c := draw.New(vgsvg.New(pageWidth, f.height))
	return f, f.lay(c)
}

// overlaps says whether two rectangles share any area.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

func near(a, b vg.Length) bool { return math.Abs(float64(a-b)) < 0.01 }

// TestLayout: in every figure, short or 1.5 h long, the legend lies
// above the data area and its fault labels, never over them (the layout
// the drawing uses is asserted, not the pixels); the data area spans the timeline's plot
// area, dataLeft to dataRight; every x tick label, rendered up to
// labelSlack wider than measured, stays inside the figure; and the y
// tick labels fit left of the data area.
func TestLayout(t *testing.T) {
	long := append(eventsSample(), ev(5_389_000, 0, history.Invoke, history.FAcquire), ev(5_389_010, 0, history.OK, history.FAcquire))
	for _, fig := range []struct {
		name   string
		build  func(lockview.View) (*frame, error)
		legend bool
	}{
		{"latency", latencyFrame, true}, {"wait/hold", waitHoldFrame, true},
		{"throughput", throughputFrame, true}, {"events", eventsFrame, false},
	} {
		for _, h := range [][]history.Event{eventsSample(), long} {
			f, l := laidOut(t, fig.build, h)
			name := fmt.Sprintf("%s (x ticks up to %s s)", fig.name, lastLabel(f))
			if fig.legend && (l.legend.Size().X <= 0 || len(f.legend) == 0) {
				t.Errorf("%s: no legend", name)
			}
			if overlaps(l.legend, l.data) || l.legend.Min.Y < l.data.Max.Y+faultBand && len(f.legend) > 0 {
				t.Errorf("%s: legend %v reaches into the data area %v or the fault labels above it", name, l.legend, l.data)
			}
			if !near(l.data.Min.X, dataLeft) || !near(l.data.Max.X, dataRight) {
				t.Errorf("%s: data area from %v to %v pt, want the timeline's %v to %v", name, l.data.Min.X, l.data.Max.X, dataLeft, dataRight)
			}
			checkTickLabels(t, name, f, l)
		}
	}
}

// lastLabel is the last labelled x tick of a figure.
func lastLabel(f *frame) string {
	s := ""
	for _, tk := range f.p.X.Tick.Marker.Ticks(f.p.X.Min, f.p.X.Max) {
		if tk.Label != "" {
			s = tk.Label
		}
	}
	return s
}

// checkTickLabels: x tick labels (centred on their tick) end inside the
// figure, y tick labels start inside it.
func checkTickLabels(t *testing.T, name string, f *frame, l layout) {
	t.Helper()
	x := f.p.X
	for _, tk := range x.Tick.Marker.Ticks(x.Min, x.Max) {
		if tk.Label == "" {
			continue
		}
		at := l.data.Min.X + vg.Length(x.Norm(tk.Value))*(l.data.Max.X-l.data.Min.X)
		if end := at + x.Tick.Label.Width(tk.Label)*(1+labelSlack)/2; end > pageWidth {
			t.Errorf("%s: x tick label %q ends at %v pt, past the figure's %v", name, tk.Label, end, pageWidth)
		}
	}
	y := f.p.Y
	widest := vg.Length(0)
	for _, tk := range y.Tick.Marker.Ticks(y.Min, y.Max) {
		widest = max(widest, y.Tick.Label.Width(tk.Label))
	}
	// A label is set its width times -XAlign left of its anchor, which
	// gonum puts the widest label's width right of the plot's edge.
	if shift := widest * vg.Length(-float64(y.Tick.Label.XAlign)-1); l.plot.Min.X < shift {
		t.Errorf("%s: the y tick labels start %v pt left of the figure", name, shift-l.plot.Min.X)
	}
}

// TestLayoutLongTitle: a title too long to share its line with the
// legend puts the legend on a line of its own, still above the data.
func TestLayoutLongTitle(t *testing.T) {
	f := timeFigure(lockview.Of(sample()), strings.Repeat("a long title ", 12), "ms", false)
	for _, name := range []string{"wait p50", "wait p99", "hold p50", "hold p99"} {
		f.add(name, &density{colour: colourOK})
	}
	f.height = 200
	l := f.lay(draw.New(vgsvg.New(pageWidth, f.height)))
	if l.legend.Max.Y >= l.titleAt.Y-f.titleStyle().Height("M") || !near(l.legend.Min.X, dataLeft) {
		t.Errorf("legend %v not on a line of its own under the title at %v", l.legend, l.titleAt)
	}
	if overlaps(l.legend, l.data) || l.legend.Min.Y < l.data.Max.Y+faultBand {
		t.Errorf("legend %v reaches into the data area %v", l.legend, l.data)
	}
	if _, err := f.svg(); err != nil {
		t.Fatal(err)
	}
}
