package plots

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/zkchaos/zkchaos/checker/lockview"
)

// Throughput draws completions per second (any outcome) for each
// operation verb on the run's clock, with the fault windows shaded:
// where a fault stops the work, the lines drop. Bins are one second up
// to MaxBins seconds of run; a longer run's bins are wider (the rate is
// then the bin's mean), and the title and caption say so.
func Throughput(v lockview.View) (Figure, error) {
	w := binWidth(v.End, MaxBins)
	bins := binsOf(v.End, w)
	perF := map[string][]float64{}
	total := 0
	for _, o := range v.Ops {
		if o.Type == "" {
			continue
		}
		if perF[o.F] == nil {
			perF[o.F] = make([]float64, bins)
		}
		perF[o.F][o.Done/w]++
		total++
	}
	if len(perF) == 0 {
		return Figure{}, ErrNothingToDraw
	}
	p := timeFigure(v, "Completions per second, by operation"+meanOver(w), "completions / s", false)
	fs := make([]string, 0, len(perF))
	for f := range perF {
		fs = append(fs, f)
	}
	slices.Sort(fs)
	sec := float64(w) / 1e9
	for i, f := range fs {
		pts := make(plotter.XYs, bins)
		for b, n := range perF[f] {
			pts[b] = plotter.XY{X: (float64(b) + 0.5) * sec, Y: n / sec}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return Figure{}, fmt.Errorf("throughput of %s: %w", f, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1)
		p.Add(l)
		p.Legend.Add(f, l)
	}
	p.Legend.Top = true
	svg, err := svgOf(p, 9*vg.Inch, 3*vg.Inch)
	if err != nil {
		return Figure{}, err
	}
	return Figure{SVG: svg, Caption: fmt.Sprintf("Completions per second (ok, fail and info) of each operation, %s: %s in %s.",
		perBin(w), plural(total, "completion"), plural(bins, "bin"))}, nil
}

// meanOver is a title's note of bins wider than a second.
func meanOver(w int64) string {
	if w == 1e9 {
		return ""
	}
	return " (mean " + perBin(w) + ")"
}
