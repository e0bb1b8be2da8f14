package timeline

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
)

// window is a stretch of one lane around violations.
type window struct {
	lane     int
	half     int64
	from, to int64
	marks    []Mark
}

// zooms draws a strip around the violations of each key (see windows),
// everything one by one, so each
// double write is seen at a glance however long the run. The strips link
// to the stories but carry no violation id (the main figure does); a
// write gets its id in the first figure that draws it.
func zooms(m Model, opt Options, usedW map[int64]bool) ([]Zoom, string) {
	ws := windows(m, int64(opt.ZoomHalf), opt.MaxPerZoom)
	note := ""
	if len(ws) > opt.MaxZooms {
		note = fmt.Sprintf("Zoom strips are drawn for the first %d of %d stretches with violations; the others are marked on the timeline above.", opt.MaxZooms, len(ws))
		ws = ws[:opt.MaxZooms]
	}
	var out []Zoom
	for _, w := range ws {
		l := m.Lanes[w.lane]
		sub, marks := subLane(l, w)
		f := newFrame(opt.Width, w.from, w.to, false)
		f.usedW = usedW
		f.pfx = fmt.Sprintf("tlz%d", len(out))
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

// windows are the stretches around placed marks, in time order. A
// stretch is half either side of its first mark, narrowed (halved, down
// to minHalf) until it holds at most maxElems tenures and writes, so a
// strip stays readable and small however busy the key; the marks of its
// lane within half after the first join it.
func windows(m Model, half int64, maxElems int) []window {
	marks := slices.Clone(m.Marks)
	slices.SortStableFunc(marks, func(a, b Mark) int { return cmp.Or(cmp.Compare(a.Lane, b.Lane), cmp.Compare(a.At, b.At)) })
	var out []window
	for _, mk := range marks {
		if !mk.Placed || mk.Lane < 0 {
			continue
		}
		if k := len(out) - 1; k >= 0 && out[k].lane == mk.Lane && mk.At <= out[k].marks[0].At+out[k].half {
			out[k].to = min(max(out[k].to, mk.At+out[k].half), max(m.End, mk.At+1))
			out[k].marks = append(out[k].marks, mk)
			continue
		}
		h := fitHalf(m.Lanes[mk.Lane], mk.At, half, maxElems)
		out = append(out, window{lane: mk.Lane, half: h, from: max(mk.At-h, 0), to: min(mk.At+h, max(m.End, mk.At+1)), marks: []Mark{mk}})
	}
	slices.SortStableFunc(out, func(a, b window) int { return cmp.Compare(a.from, b.from) })
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

// zoomCaption names the key, the stretch and the violations in it.
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
	return fmt.Sprintf("%s from %s to %s: %s", key, seconds(w.from), seconds(w.to), strings.Join(parts, "; "))
}
