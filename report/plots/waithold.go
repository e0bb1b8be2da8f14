package plots

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/history"
)

// queueVerbs are the verbs that enter and leave a lock's queue, per
// workload: a campaign is an election's acquire.
var queueVerbs = [][2]string{{history.FAcquire, history.FRelease}, {history.FCampaign, history.FResign}}

// WaitHold draws, per one-second bin, the median and the 99th percentile
// of the lock wait (an ok acquire's invocation to its answer, at the
// answer) and of the hold (that answer to the same process's next
// release of the key, at the release), log scale, with the fault windows
// shaded: wait and hold times are among the figures a lock service is
// watched by (docs/background.md#what-the-metrics-mean). A run longer than MaxBins
// seconds has wider bins, which the title and caption say. A history
// with no ok acquire (or campaign) gives ErrNothingToDraw.
func WaitHold(v lockview.View) (Figure, error) { return render(waitHoldFrame(v)) }

// waitHoldFrame builds the figure WaitHold draws.
func waitHoldFrame(v lockview.View) (*frame, error) {
	w := binWidth(v.End, MaxBins)
	bins := binsOf(v.End, w)
	wait, hold := make([][]int64, bins), make([][]int64, bins)
	for _, qv := range queueVerbs {
		collectWaitHold(v.Ops, qv[0], qv[1], w, wait, hold)
	}
	f := timeFigure(v, "Lock wait and hold, "+perBin(w)+" (median and p99)", "ms (log scale)", true)
	drawn := 0
	for i, s := range []struct {
		name string
		of   [][]int64
		q    float64
	}{{"wait p50", wait, 0.5}, {"wait p99", wait, 0.99}, {"hold p50", hold, 0.5}, {"hold p99", hold, 0.99}} {
		pts := quantiles(s.of, s.q, w)
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i / 2)
		f.p.Add(l)
		f.add(s.name, l)
		drawn++
	}
	if drawn == 0 {
		return nil, ErrNothingToDraw
	}
	f.height, f.caption = 220, fmt.Sprintf("Lock wait (invocation to grant of each ok acquire, at the grant) and hold (grant to the holder's release, at the release), median and 99th percentile %s, log scale: %s, %s.",
		perBin(w), plural(flat(wait), "wait"), plural(flat(hold), "hold"))
	return f, nil
}

// flat is how many durations the bins hold.
func flat(bins [][]int64) int {
	n := 0
	for _, b := range bins {
		n += len(b)
	}
	return n
}

// collectWaitHold bins (width w ns) the waits of ok enter operations and
// the holds that followed them until the process's next leave of the key.
func collectWaitHold(ops []lockview.Op, enter, leave string, w int64, wait, hold [][]int64) {
	held := map[history.Process]map[string]int64{} // process → key → granted at
	for _, o := range ops {
		switch {
		case o.F == enter && o.Type == history.OK:
			wait[o.Done/w] = append(wait[o.Done/w], o.Done-o.Invoke)
			if held[o.Process] == nil {
				held[o.Process] = map[string]int64{}
			}
			held[o.Process][o.Key] = o.Done
		case o.F == leave:
			if at, ok := held[o.Process][o.Key]; ok {
				hold[o.Invoke/w] = append(hold[o.Invoke/w], o.Invoke-at)
				delete(held[o.Process], o.Key)
			}
		}
	}
}

// ms is a duration in ms, clamped for the log axis.
func ms(ns int64) float64 { return math.Max(float64(ns)/1e6, minLatencyMS) }

// quantiles is the q-quantile (nearest rank) of each non-empty bin (width
// w ns) of nanosecond durations, in ms at the bin's middle.
func quantiles(bins [][]int64, q float64, w int64) plotter.XYs {
	var out plotter.XYs
	for b, xs := range bins {
		if len(xs) == 0 {
			continue
		}
		s := slices.Clone(xs)
		slices.Sort(s)
		out = append(out, plotter.XY{X: (float64(b) + 0.5) * float64(w) / 1e9, Y: ms(stats.NearestRank(s, q))})
	}
	return out
}
