package plots

import (
	"fmt"
	"slices"
	"strconv"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/observe/resources"
)

// ResourceKind is one of a soak's resource figures.
type ResourceKind int

// The resource figures of a soak, each on the run's clock with the fault
// windows shaded, as every figure.
const (
	ControllerRSS ResourceKind = iota // the controller's resident set
	JVMRSS                            // each server's JVM's resident set
	OpenFiles                         // open descriptors: controller, each JVM, workers summed
	ServerCounts                      // each server's znodes, watches, ephemerals (mntr)
	DataDirs                          // each server's data directories
)

// resourceSeries is one line: its name and value in a sample (false: not
// read in that sample, a gap).
type resourceSeries struct {
	name  string
	value func(resources.Sample) (float64, bool)
}

// Resources draws one resource figure from a soak's samples. Past
// MaxBins samples a line is binned (each bin's mean), and the caption
// says so; a sample that could not read a figure breaks its line there.
func Resources(v lockview.View, samples []resources.Sample, kind ResourceKind) (Figure, error) {
	return render(resourcesFrame(v, samples, kind))
}

func resourcesFrame(v lockview.View, samples []resources.Sample, kind ResourceKind) (*frame, error) {
	title, yLabel, series := resourceFigure(samples, kind)
	// The clock runs to the last sample when the history stops before it
	// (a soak killed while its workers were still starting left samples
	// and hardly any history): every sample taken is shown.
	for _, s := range samples {
		v.End = max(v.End, s.TimeNS)
	}
	fr := timeFigure(v, title, yLabel, false)
	fr.p.Y.Min = 0
	var kept []resources.Sample
	for _, s := range samples {
		if s.TimeNS <= v.End {
			kept = append(kept, s)
		}
	}
	w := int64(0)
	if len(kept) > MaxBins {
		w = binWidth(v.End, MaxBins)
	}
	drawn := 0
	for i, sr := range series {
		var legend *plotter.Line
		for _, seg := range resourceLine(kept, sr.value, w) {
			l, err := plotter.NewLine(seg)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sr.name, err)
			}
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i / 7)
			l.Width = vg.Points(1)
			fr.p.Add(l)
			legend = l
			drawn++
		}
		if legend != nil {
			fr.add(sr.name, legend)
		}
	}
	if drawn == 0 {
		return nil, fmt.Errorf("%w: no resource sample read it", ErrNothingToDraw)
	}
	fr.height = 200
	fr.caption = fmt.Sprintf("%s at each of %s", title, plural(len(kept), "resource sample"))
	if w > 0 {
		fr.caption += fmt.Sprintf(", binned (mean %s)", perBin(w))
	}
	fr.caption += "; a gap is a sample that could not read it."
	return fr, nil
}

// resourceLine is one series' points in pieces (a sample that did not
// read it ends a piece), each bin of width w its mean (w 0: every sample).
func resourceLine(samples []resources.Sample, value func(resources.Sample) (float64, bool), w int64) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	bin, sum, n := int64(-1), 0.0, 0
	flush := func() {
		if n > 0 {
			x := float64(bin*w+w/2) / 1e9
			cur = append(cur, plotter.XY{X: x, Y: sum / float64(n)})
		}
		sum, n = 0, 0
	}
	for _, s := range samples {
		y, ok := value(s)
		if !ok {
			flush()
			if len(cur) > 0 {
				segs, cur = append(segs, cur), nil
			}
			continue
		}
		if w == 0 {
			cur = append(cur, plotter.XY{X: float64(s.TimeNS) / 1e9, Y: y})
			continue
		}
		if b := s.TimeNS / w; b != bin {
			flush()
			bin = b
		}
		sum += y
		n++
	}
	flush()
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// resourceFigure is a kind's title, y label and lines (servers and JVMs
// as the samples name them).
func resourceFigure(samples []resources.Sample, kind ResourceKind) (string, string, []resourceSeries) {
	ids := serverIDs(samples)
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	switch kind {
	case ControllerRSS:
		return "Controller RSS", "MiB", []resourceSeries{{"controller", func(s resources.Sample) (float64, bool) {
			p, ok := s.Controller()
			return mib(p.RSS), ok && p.RSS > 0
		}}}
	case JVMRSS:
		var out []resourceSeries
		for _, id := range ids {
			out = append(out, resourceSeries{"n" + strconv.Itoa(id), procValue(resources.RoleZooKeeper, id, func(p resources.Proc) float64 { return mib(p.RSS) })})
		}
		return "ZooKeeper JVM RSS", "MiB", out
	case OpenFiles:
		out := []resourceSeries{{"controller", procValue(resources.RoleController, 0, func(p resources.Proc) float64 { return float64(p.OpenFiles) })}}
		for _, id := range ids {
			out = append(out, resourceSeries{"n" + strconv.Itoa(id), procValue(resources.RoleZooKeeper, id, func(p resources.Proc) float64 { return float64(p.OpenFiles) })})
		}
		out = append(out, resourceSeries{"workers (sum)", func(s resources.Sample) (float64, bool) {
			_, _, files := s.Total(resources.RoleWorker)
			return float64(files), true
		}})
		return "Open files", "descriptors", out
	case ServerCounts:
		var out []resourceSeries
		for _, id := range ids {
			n := "n" + strconv.Itoa(id) + " "
			out = append(out,
				resourceSeries{n + "znodes", serverValue(id, func(sv resources.Server) *int64 { return sv.Znodes })},
				resourceSeries{n + "watches", serverValue(id, func(sv resources.Server) *int64 { return sv.Watches })},
				resourceSeries{n + "ephemerals", serverValue(id, func(sv resources.Server) *int64 { return sv.Ephemerals })})
		}
		return "Znodes, watches and ephemerals per server (mntr)", "count", out
	default:
		var out []resourceSeries
		for _, id := range ids {
			out = append(out, resourceSeries{"n" + strconv.Itoa(id), func(s resources.Sample) (float64, bool) {
				for _, sv := range s.Servers {
					if sv.ID == id && sv.DataBytes >= 0 {
						return mib(uint64(sv.DataBytes)), true
					}
				}
				return 0, false
			}})
		}
		return "Data directory size per server", "MiB", out
	}
}

func procValue(role string, id int, f func(resources.Proc) float64) func(resources.Sample) (float64, bool) {
	return func(s resources.Sample) (float64, bool) {
		for _, p := range s.Procs {
			if p.Role == role && p.ID == id {
				return f(p), p.Error == ""
			}
		}
		return 0, false
	}
}

func serverValue(id int, f func(resources.Server) *int64) func(resources.Sample) (float64, bool) {
	return func(s resources.Sample) (float64, bool) {
		for _, sv := range s.Servers {
			if sv.ID == id {
				if v := f(sv); v != nil {
					return float64(*v), true
				}
			}
		}
		return 0, false
	}
}

// serverIDs are the servers the samples name, in id order.
func serverIDs(samples []resources.Sample) []int {
	seen := map[int]bool{}
	var ids []int
	for _, s := range samples {
		for _, sv := range s.Servers {
			if !seen[sv.ID] {
				seen[sv.ID] = true
				ids = append(ids, sv.ID)
			}
		}
	}
	slices.Sort(ids)
	return ids
}
