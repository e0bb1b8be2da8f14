package timeline

import (
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
)

// faults shades each fault window from y0 to y1 and writes its verb at
// the top, as the report's figures do (package plots), so the timeline
// lines up with them.
func (f *frame) faults(ws []checker.FaultWindow, y0, y1 float64) {
	for _, w := range ws {
		if w.To < f.t0 || w.From > f.t1 {
			continue
		}
		a, b := f.x(w.From), f.x(w.To)
		title := fmt.Sprintf("%s from %s to %s", w.F, seconds(w.From), seconds(w.To))
		if w.Target != "" {
			title += ": " + w.Target
		}
		f.s.rect("tl-fault", "", a, y0-12, max(b-a, 1), y1-y0+12, title)
		f.s.text("tl-flbl", a+2, y0-3, "start", w.F)
	}
}

// axis draws the run clock under the lanes, in seconds, with a light
// grid line at every tick.
func (f *frame) axis(y0, y1 float64) {
	for _, tk := range ClockTicks(f.t0, f.t1) {
		x := f.x(tk.At)
		f.s.path("tl-grid", "", fmt.Sprintf("M%s %sV%s", n(x), n(y0), n(y1+4)), "")
		f.s.text("tl-sub", x, y1+15, "middle", tk.Label)
	}
	f.s.text("tl-sub", leftW-8, y1+15, "end", "run clock (s)")
}

// ClockTick is a labelled time (ns) on a run-clock axis.
type ClockTick struct {
	At    int64
	Label string
}

// ClockTicks are the ticks of a run-clock axis over [t0, t1] (ns): about
// ten, a round step apart, labelled in seconds. Package plots labels its
// figures' time axes with them too, so they read as the timeline's.
func ClockTicks(t0, t1 int64) []ClockTick {
	step := niceWidth((t1 - t0) / 10)
	var out []ClockTick
	for t := (t0 + step - 1) / step * step; t <= t1; t += step {
		out = append(out, ClockTick{At: t, Label: tickLabel(t, step)})
	}
	return out
}

// tickLabel writes t with as many decimals as the step needs.
func tickLabel(t, step int64) string {
	switch {
	case step >= 1e9:
		return fmt.Sprintf("%d", t/1e9)
	case step >= 1e8:
		return fmt.Sprintf("%.1f", float64(t)/1e9)
	case step >= 1e7:
		return fmt.Sprintf("%.2f", float64(t)/1e9)
	}
	return fmt.Sprintf("%.3f", float64(t)/1e9)
}
