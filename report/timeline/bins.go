package timeline

import (
	"fmt"
	"math"
)

// bins is a summarised lane: per time bin, the grants that began in it,
// the processes they went to, how long the key was held, and the writes.
type bins struct {
	t0, width int64
	b         []bin
	maxWrites int
}

type bin struct {
	grants   int
	procs    map[int]struct{}
	held     int64
	acc, rej int
}

// niceWidth rounds a bin width up to 1, 2 or 5 times a power of ten (ns),
// so that bins start on round times.
func niceWidth(raw int64) int64 {
	if raw < 1 {
		return 1
	}
	p := int64(math.Pow(10, math.Floor(math.Log10(float64(raw)))))
	for _, m := range []int64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// binLane summarises lane l over the frame's span in about k bins.
func binLane(l *Lane, f *frame, k int) *bins {
	bs := &bins{t0: f.t0, width: niceWidth((f.t1 - f.t0 + int64(k) - 1) / int64(k))}
	bs.b = make([]bin, (f.t1-f.t0)/bs.width+1)
	idx := func(t int64) int { return int(min(max(t-f.t0, 0)/bs.width, int64(len(bs.b)-1))) }
	for _, t := range l.Tenures {
		b := &bs.b[idx(t.From)]
		b.grants++
		if b.procs == nil {
			b.procs = map[int]struct{}{}
		}
		b.procs[int(t.Process)] = struct{}{}
		for i := idx(t.From); i <= idx(t.To); i++ {
			from := bs.t0 + int64(i)*bs.width
			bs.b[i].held += min(t.To, from+bs.width) - max(t.From, from)
		}
	}
	for _, w := range l.Writes {
		b := &bs.b[idx(w.At)]
		if w.Accepted {
			b.acc++
		} else {
			b.rej++
		}
		bs.maxWrites = max(bs.maxWrites, b.acc+b.rej)
	}
	return bs
}

// drawBins shades each bin by the share of it the key was held (over the
// lane's rows) and draws its writes as a bar in the write strip, its
// height the bin's writes over the lane's busiest bin; every bin says its
// numbers in its tooltip.
func (f *frame) drawBins(ld *laneDraw) {
	rows := float64(ld.l.Rows) * rowH
	strip := ld.y + rows
	for i, b := range ld.bins.b {
		from := ld.bins.t0 + int64(i)*ld.bins.width
		to := from + ld.bins.width
		x0, x1 := f.x(from), f.x(to)
		span := fmt.Sprintf("%s to %s", seconds(from), seconds(to))
		if b.held > 0 || b.grants > 0 {
			share := min(float64(b.held)/float64(ld.bins.width), 1)
			f.s.elem("rect", "tl-hold", "", fmt.Sprintf(`x="%s" y="%s" width="%s" height="%s" fill-opacity="%.2f"`,
				n(x0), n(ld.y+1), n(max(x1-x0, 0.3)), n(rows-2), 0.12+0.6*share),
				fmt.Sprintf("%s: %d grants to %d processes; held %.0f%% of the time", span, b.grants, len(b.procs), 100*share))
		}
		if b.acc+b.rej == 0 {
			continue
		}
		title := fmt.Sprintf("%s: %d writes accepted, %d rejected", span, b.acc, b.rej)
		h := (writeH - 2) * float64(b.acc+b.rej) / float64(ld.bins.maxWrites)
		hr := (writeH - 2) * float64(b.rej) / float64(ld.bins.maxWrites)
		y := strip + writeH - 1 - h
		f.s.rect("tl-wbin", "", x0, y, x1-x0, h-hr, title)
		if b.rej > 0 {
			f.s.rect("tl-wrbin", "", x0, y+h-hr, x1-x0, max(hr, 1), title)
		}
	}
}
