package timeline

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
)

// window is a stretch of one lane around violations or rejected
// writes.
type window struct {
	lane     int
	first    int64 // the first point's time
	half     int64
	from, to int64
	marks    []Mark
	rejected int
}

// zooms draws a strip around the violations and the rejected writes of
// each key (see windows), everything one by one, so each double write,
// and each stale write that fencing turned away, is seen at a glance
// however long the run. Stretches with violations come first. The strips
// link to the stories but carry no violation id (the main figure does);
// a write gets its id in the first figure that draws it.
func zooms(m Model, opt Options, usedW map[int64]bool) ([]Zoom, string) {
	ws := windows(m, int64(opt.ZoomHalf), opt.MaxPerZoom)
	note := ""
	if len(ws) > opt.MaxZooms {
		note = fmt.Sprintf("Zoom strips are drawn for %d of %d stretches with violations or rejected writes (violations first, then by time); the others are only in the timeline above.", opt.MaxZooms, len(ws))
		ws = ws[:opt.MaxZooms]
	}
	var out []Zoom
	for _, w := range ws {
		l := m.Lanes[w.lane]
		sub, marks := subLane(l, w)
		f := newFrame(opt.Width, w.from, w.to, false, opt)
		f.usedW = usedW
		f.pfx = fmt.Sprintf("%stlz%d", opt.Prefix, len(out))
		ld := &laneDraw{l: sub, ten: upTo(len(sub.Tenures)), wr: upTo(len(sub.Writes)), marks: marks, involved: map[int]bool{}}
		for _, mk := range marks {
			for _, i := range mk.Writes {
				ld.involved[i] = true
			}
		}
		f.draw([]*laneDraw{ld}, clipFaults(m.Faults, w.from, w.to), "zoom on "+l.Key)
		out = append(out, Zoom{Caption: zoomCaption(l.Key, w), SVG: f.s.b.Bytes()})
	}
	return out, note
}

// point is what a zoom strip is drawn around: a placed violation, or a
// rejected write (mark nil).
type point struct {
	lane int
	at   int64
	mark *Mark
}

// windows are the stretches around the points of each lane: half either
// side of the first, narrowed (halved, down to minHalf) until it holds at
// most maxElems tenures and writes, so a strip stays readable and small
// however busy the key; the points of its lane within half after the
// first join it. Those with violations come first, each group in time
// order.
func windows(m Model, half int64, maxElems int) []window {
	var ps []point
	for i := range m.Marks {
		if mk := &m.Marks[i]; mk.Placed && mk.Lane >= 0 {
			ps = append(ps, point{lane: mk.Lane, at: mk.At, mark: mk})
		}
	}
	for li, l := range m.Lanes {
		for _, w := range l.Writes {
			if !w.Accepted {
				ps = append(ps, point{lane: li, at: w.At})
			}
		}
	}
	slices.SortStableFunc(ps, func(a, b point) int { return cmp.Or(cmp.Compare(a.lane, b.lane), cmp.Compare(a.at, b.at)) })
	end := m.End
	var out []window
	for _, p := range ps {
		k := len(out) - 1
		if k < 0 || out[k].lane != p.lane || p.at > out[k].first+out[k].half {
			h := fitHalf(m.Lanes[p.lane], p.at, half, maxElems)
			out = append(out, window{lane: p.lane, first: p.at, half: h, from: max(p.at-h, 0), to: p.at})
			k++
		}
		out[k].to = min(max(out[k].to, p.at+out[k].half), max(end, p.at+1))
		if p.mark != nil {
			out[k].marks = append(out[k].marks, *p.mark)
		} else {
			out[k].rejected++
		}
	}
	slices.SortStableFunc(out, func(a, b window) int {
		return cmp.Or(cmp.Compare(min(len(b.marks), 1), min(len(a.marks), 1)), cmp.Compare(a.from, b.from))
	})
	return out
}

// minHalf is the narrowest a zoom strip gets: a few critical sections.
const minHalf = int64(50 * time.Millisecond)

func fitHalf(l *Lane, at, half int64, maxElems int) int64 {
	for half > minHalf && elemsIn(l, at-half, at+half) > maxElems {
		half /= 2
	}
	return half
}

func elemsIn(l *Lane, from, to int64) int {
	c := 0
	for _, t := range l.Tenures {
		if t.To >= from && t.From <= to {
			c++
		}
	}
	for _, w := range l.Writes {
		if w.At >= from && w.At <= to {
			c++
		}
	}
	return c
}

// subLane is the part of l inside w, its rows laid out afresh, with the
// window's marks pointing into it.
func subLane(l *Lane, w window) (*Lane, []Mark) {
	sub := &Lane{Key: l.Key}
	tmap, wmap := map[int]int{}, map[int]int{}
	for i, t := range l.Tenures {
		if t.To >= w.from && t.From <= w.to {
			tmap[i] = len(sub.Tenures)
			sub.Tenures = append(sub.Tenures, t)
		}
	}
	for i, x := range l.Writes {
		if x.At >= w.from && x.At <= w.to {
			wmap[i] = len(sub.Writes)
			sub.Writes = append(sub.Writes, x)
		}
	}
	sub.Rows = assignRows(sub.Tenures)
	marks := make([]Mark, 0, len(w.marks))
	for _, mk := range w.marks {
		mk.Tenures, mk.Writes = remap(mk.Tenures, tmap), remap(mk.Writes, wmap)
		marks = append(marks, mk)
	}
	return sub, marks
}

func remap(xs []int, m map[int]int) []int {
	var out []int
	for _, x := range xs {
		if y, ok := m[x]; ok {
			out = append(out, y)
		}
	}
	return out
}

func clipFaults(ws []checker.FaultWindow, from, to int64) []checker.FaultWindow {
	var out []checker.FaultWindow
	for _, w := range ws {
		if w.To >= from && w.From <= to {
			out = append(out, w)
		}
	}
	return out
}

// zoomCaption names the key, the stretch, the violations in it and the
// rejected writes.
func zoomCaption(key string, w window) string {
	byChecker := map[string][]string{}
	var order []string
	for _, mk := range w.marks {
		if _, ok := byChecker[mk.Checker]; !ok {
			order = append(order, mk.Checker)
		}
		byChecker[mk.Checker] = append(byChecker[mk.Checker], fmt.Sprintf("#%d", mk.Index))
	}
	var parts []string
	for _, c := range order {
		parts = append(parts, c+" "+strings.Join(byChecker[c], ", "))
	}
	switch {
	case w.rejected == 1:
		parts = append(parts, "1 write rejected by the register")
	case w.rejected > 1:
		parts = append(parts, fmt.Sprintf("%d writes rejected by the register", w.rejected))
	}
	return fmt.Sprintf("%s from %s to %s: %s", key, seconds(w.from), seconds(w.to), strings.Join(parts, "; "))
}
