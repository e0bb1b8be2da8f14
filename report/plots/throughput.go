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
func Throughput(v lockview.View) (Figure, error) { return render(throughputFrame(v)) }

// throughputFrame builds the figure Throughput draws.
func throughputFrame(v lockview.View) (*frame, error) {
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
		return nil, ErrNothingToDraw
	}
	fr := timeFigure(v, "Completions per second, by operation"+meanOver(w), "completions / s", false)
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
			return nil, fmt.Errorf("throughput of %s: %w", f, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1)
		fr.p.Add(l)
		fr.add(f, l)
	}
	fr.height, fr.caption = 220, fmt.Sprintf("Completions per second (ok, fail and info) of each operation, %s: %s in %s.",
		perBin(w), plural(total, "completion"), plural(bins, "bin"))
	return fr, nil
}

// meanOver is a title's note of bins wider than a second.
func meanOver(w int64) string {
	if w == 1e9 {
		return ""
	}
	return " (mean " + perBin(w) + ")"
}
