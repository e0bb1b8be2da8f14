package plots

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// Throughput draws completions per second (any outcome) for each
// operation verb, in one-second bins on the run's clock, with the fault
// windows shaded: where a fault stops the work, the lines drop.
func Throughput(h []history.Event) ([]byte, error) {
	v := lockview.Of(h)
	bins := int(v.End/1e9) + 1
	perF := map[string][]float64{}
	for _, o := range v.Ops {
		if o.Type == "" {
			continue
		}
		if perF[o.F] == nil {
			perF[o.F] = make([]float64, bins)
		}
		perF[o.F][int(o.Done/1e9)]++
	}
	if len(perF) == 0 {
		return nil, ErrNothingToDraw
	}
	p := timeFigure(v, "Completions per second, by operation", "completions / s", false)
	fs := make([]string, 0, len(perF))
	for f := range perF {
		fs = append(fs, f)
	}
	slices.Sort(fs)
	for i, f := range fs {
		pts := make(plotter.XYs, bins)
		for b, n := range perF[f] {
			pts[b] = plotter.XY{X: float64(b) + 0.5, Y: n}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("throughput of %s: %w", f, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1)
		p.Add(l)
		p.Legend.Add(f, l)
	}
	p.Legend.Top = true
	return svgOf(p, 9*vg.Inch, 3*vg.Inch)
}
