package plots

import (
	"fmt"
	"path"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/observe/monitor"
)

// Waiters draws, per lock directory, how many nodes queued behind the
// first one at each monitor sample (waiters per lock path, a figure a lock
// service is watched by: docs/background.md#what-the-metrics-mean), on
// the run's clock with the fault windows shaded. A sample that could not
// read a directory breaks its line there (the queue was not seen, not
// empty). Samples without any directory read give ErrNothingToDraw.
func Waiters(v lockview.View, samples []monitor.Sample) (Figure, error) {
	return render(waitersFrame(v, samples))
}

// waitersFrame builds the figure Waiters draws.
func waitersFrame(v lockview.View, samples []monitor.Sample) (*frame, error) {
	order, lines := waiterSeries(samples, v.End)
	fr := timeFigure(v, "Waiters per lock path (monitor samples: children behind the first)", "waiting nodes", false)
	p := fr.p
	p.Y.Min = 0
	drawn := 0
	for i, dir := range order {
		var legend *plotter.Line
		for _, seg := range lines[dir] {
			if len(seg) == 0 {
				continue
			}
			l, err := plotter.NewLine(seg)
			if err != nil {
				return nil, fmt.Errorf("waiters of %s: %w", dir, err)
			}
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i / 7)
			l.Width = vg.Points(1)
			l.StepStyle = plotter.PostStep
			p.Add(l)
			legend = l
			drawn++
		}
		if legend != nil {
			fr.add(path.Base(dir), legend)
		}
	}
	if drawn == 0 {
		return nil, fmt.Errorf("%w: no monitor sample read a lock directory", ErrNothingToDraw)
	}
	fr.height = 220
	fr.caption = fmt.Sprintf("Waiters per lock path at each of %s (children of the lock directory behind the first, as zkCli's ls shows them); a gap is a sample that could not read the directory.",
		plural(len(samples), "monitor sample"))
	return fr, nil
}

// waiterSeries is, per directory (in the order first read), the waiters
// at each sample up to end, in pieces: a sample that could not read the
// directory ends a piece.
func waiterSeries(samples []monitor.Sample, end int64) ([]string, map[string][]plotter.XYs) {
	var order []string
	lines := map[string][]plotter.XYs{}
	for _, s := range samples {
		if s.TimeNS > end {
			continue
		}
		x := float64(s.TimeNS) / 1e9
		for _, d := range s.Dirs {
			segs, seen := lines[d.Path]
			if !seen {
				order = append(order, d.Path)
			}
			switch {
			case d.Error != "" && len(segs) > 0 && len(segs[len(segs)-1]) > 0:
				segs = append(segs, nil) // a gap
			case d.Error != "":
			case len(segs) == 0:
				segs = append(segs, plotter.XYs{{X: x, Y: float64(d.Waiters())}})
			default:
				segs[len(segs)-1] = append(segs[len(segs)-1], plotter.XY{X: x, Y: float64(d.Waiters())})
			}
			lines[d.Path] = segs
		}
	}
	return order, lines
}
