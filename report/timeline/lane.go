package timeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zkchaos/zkchaos/report/anchor"
)

// laneDraw is one lane as a figure draws it: which tenures and writes go
// one by one, and the bins when the rest is summarised.
type laneDraw struct {
	l     *Lane
	y     float64
	ten   []int // indexes in l.Tenures drawn one by one
	wr    []int // indexes in l.Writes drawn one by one
	bins  *bins // nil: nothing summarised
	marks []Mark
	// involved writes (indexes in l.Writes), drawn as violation dots.
	involved map[int]bool
	// note says what was summarised; onlyMarks that even the notable
	// elements were.
	note      string
	onlyMarks bool
}

func (ld *laneDraw) height() float64 { return float64(ld.l.Rows)*rowH + writeH }

// planLane decides what lane i draws one by one. Under MaxPerLane
// elements everything is; over it, the lane is summarised in bins, and
// only what a violation involves, and (while they fit in the bound) the
// notable tenures (a fault acted on the holder, or it was retired) and the
// rejected writes, are drawn on their own. The note says so in words.
func planLane(l *Lane, i int, marks []Mark, opt Options, f *frame) *laneDraw {
	ld := &laneDraw{l: l, involved: map[int]bool{}}
	mustT, mustW := map[int]bool{}, map[int]bool{}
	for _, mk := range marks {
		if mk.Lane != i || !mk.Placed {
			continue
		}
		ld.marks = append(ld.marks, mk)
		for _, t := range mk.Tenures {
			mustT[t] = true
		}
		for _, w := range mk.Writes {
			mustW[w], ld.involved[w] = true, true
		}
	}
	if len(l.Tenures)+len(l.Writes) <= opt.MaxPerLane {
		ld.ten, ld.wr = upTo(len(l.Tenures)), upTo(len(l.Writes))
		return ld
	}
	var notableT, notableW []int
	for j, t := range l.Tenures {
		if !mustT[j] && (len(t.Faults) > 0 || t.RetiredAt >= 0) {
			notableT = append(notableT, j)
		}
	}
	for j, w := range l.Writes {
		if !mustW[j] && !w.Accepted {
			notableW = append(notableW, j)
		}
	}
	if len(notableT)+len(notableW) > opt.MaxPerLane {
		notableT, notableW = nil, nil
		ld.onlyMarks = true
	}
	ld.ten = sortedSet(mustT, notableT)
	ld.wr = sortedSet(mustW, notableW)
	ld.bins = binLane(l, f, opt.Bins)
	ld.note = fmt.Sprintf("%s: %d tenures and %d writes summarised; %d tenures and %d writes drawn one by one",
		l.Key, len(l.Tenures), len(l.Writes), len(ld.ten), len(ld.wr))
	if ld.onlyMarks {
		ld.note += " (only those of violations: there are too many paused, retired or rejected ones to draw each)"
	}
	return ld
}

func upTo(k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = i
	}
	return out
}

func sortedSet(set map[int]bool, more []int) []int {
	out := append([]int(nil), more...)
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// lane draws one lane: its label, the bins, the tenures
// and the writes. Marks come later, on top of every lane.
func (f *frame) lane(ld *laneDraw) {
	l := ld.l
	f.s.text("tl-key", leftW-8, ld.y+11, "end", l.Key)
	f.s.text("tl-sub", leftW-8, ld.y+23, "end", fmt.Sprintf("%d tenures, %d writes", len(l.Tenures), len(l.Writes)))
	if ld.bins != nil {
		f.drawBins(ld)
	}
	for _, i := range ld.ten {
		f.tenure(ld, i)
	}
	for _, i := range ld.wr {
		f.write(ld, i)
	}
}

// tenure draws one bar with its tooltip, the spans a fault acted on the
// holder (hatched), the part after the holder was retired (faded, dashed)
// and its label when the bar is wide enough.
func (f *frame) tenure(ld *laneDraw, i int) {
	t := ld.l.Tenures[i]
	x0, x1 := f.x(t.From), f.x(t.To)
	y := ld.y + float64(t.Row)*rowH + (rowH-barH)/2
	f.s.rect(fmt.Sprintf("tl-b%d", i%2), "", x0, y, x1-x0, barH, tenureTitle(t))
	for _, sp := range t.Faults {
		a, b := f.x(sp.From), f.x(sp.To)
		f.s.elem("rect", "", "", fmt.Sprintf(`x="%s" y="%s" width="%s" height="%s" fill="url(#%shatch)"`, n(a), n(y), n(max(b-a, 1)), n(barH), f.pfx),
			fmt.Sprintf("%s of p%d from %s to %s", sp.F, t.Process, seconds(sp.From), seconds(sp.To)))
	}
	if t.RetiredAt >= 0 {
		a := f.x(t.RetiredAt)
		f.s.rect("tl-ret", "", a, y+0.5, x1-a, barH-1, fmt.Sprintf("p%d retired at %s: an operation of it completed info; its worker kept running", t.Process, seconds(t.RetiredAt)))
	}
	if lbl := fitLabel(t, x1-x0); lbl != "" {
		f.s.text("tl-lbl", x0+3, y+barH-2.5, "start", lbl)
	}
}

// tenureLabel is "p3 t=123"; fitLabel shortens it to "p3" or nothing to
// fit a bar of w pixels.
func tenureLabel(t Tenure) string {
	if !t.HasToken {
		return fmt.Sprintf("p%d", t.Process)
	}
	return fmt.Sprintf("p%d t=%d", t.Process, t.Token)
}

func fitLabel(t Tenure, w float64) string {
	for _, s := range []string{tenureLabel(t), fmt.Sprintf("p%d", t.Process)} {
		if len(s) <= maxLabel && float64(len(s))*labelPx+6 <= w {
			return s
		}
	}
	return ""
}

func tenureTitle(t Tenure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: held from %s to %s (%s)", tenureLabel(t), seconds(t.From), seconds(t.To), t.Ended)
	if t.RetiredAt >= 0 {
		fmt.Fprintf(&b, "; retired at %s", seconds(t.RetiredAt))
	}
	for _, sp := range t.Faults {
		fmt.Fprintf(&b, "; %s from %s to %s", sp.F, seconds(sp.From), seconds(sp.To))
	}
	return b.String()
}

// write draws one write in the lane's strip: an accepted one as a dark
// tick, a rejected one as a red cross under a dashed red line, one a
// violation involves as a red dot. Its id is anchor.Write(seq), once on the page.
func (f *frame) write(ld *laneDraw, i int) {
	w := ld.l.Writes[i]
	x := f.x(w.At)
	y := ld.y + float64(ld.l.Rows)*rowH
	id := ""
	if !f.usedW[w.Seq] {
		id = f.idPfx + anchor.Write(w.Seq)
		f.usedW[w.Seq] = true
	}
	title := writeTitle(w)
	switch {
	case ld.involved[i]:
		f.s.elem("circle", "tl-wv", id, fmt.Sprintf(`cx="%s" cy="%s" r="4"`, n(x), n(y+writeH/2)), title)
	case w.Accepted:
		f.s.path("tl-w", id, fmt.Sprintf("M%s %sv%s", n(x), n(y+2), n(writeH-4)), title)
	default:
		// A dashed line up through the rows shows whose tenure the
		// refused write fell in.
		f.s.path("tl-wrl", "", fmt.Sprintf("M%s %sV%s", n(x), n(ld.y), n(y+1)), "")
		f.s.path("tl-wr", id, fmt.Sprintf("M%s %sl8 8m0-8l-8 8", n(x-4), n(y+2)), title)
	}
}

func writeTitle(w Write) string {
	what := fmt.Sprintf("wrote %d", w.Value)
	if w.Op != "write" {
		what = w.Op + " " + w.Task
	}
	tok := "no token"
	if w.HasToken {
		tok = fmt.Sprintf("token %d", w.Token)
	}
	verdict := "accepted"
	if !w.Accepted {
		verdict = "rejected"
		if w.Reason != "" {
			verdict += ": " + w.Reason
		}
	}
	return fmt.Sprintf("seq %d at %s: p%d %s with %s, %s", w.Seq, seconds(w.At), w.Process, what, tok, verdict)
}

// mark draws one violation: a red triangle above the lane and a red line
// down through every row at the moment it happened, so the tenure it
// crosses is plain; the tenures involved outlined; the writes involved
// joined by an arc. In the main figure the group carries the violation's
// id; everywhere it links to the violation's story.
func (f *frame) mark(ld *laneDraw, mk Mark) {
	x := f.x(mk.At)
	id := ""
	if f.ids {
		id = f.idPfx + anchor.Violation(mk.Checker, mk.Index)
	}
	f.s.printf(`<a href="%s">`, esc(f.storyPage+anchor.Href(anchor.Story(mk.Checker, mk.Index))))
	f.s.open("g", "tl-mark", id, "")
	f.s.printf("<title>%s</title>", esc(fmt.Sprintf("%s #%d: %s", mk.Checker, mk.Index, mk.Text)))
	for _, ti := range mk.Tenures {
		t := ld.l.Tenures[ti]
		y := ld.y + float64(t.Row)*rowH + (rowH-barH)/2
		a, b := f.x(t.From), f.x(t.To)
		f.s.rect("tl-inv", "", a-1, y-1, b-a+2, barH+2, "")
	}
	bottom := ld.y + ld.height()
	f.s.path("", "", fmt.Sprintf("M%s %sV%s", n(x), n(ld.y-2), n(bottom)), "")
	f.s.path("tl-tri", "", fmt.Sprintf("M%s %sh10l-5 8z", n(x-5), n(ld.y-11)), "")
	strip := ld.y + float64(ld.l.Rows)*rowH + writeH/2
	for j := 0; j+1 < len(mk.Writes); j++ {
		a, b := f.x(ld.l.Writes[mk.Writes[j]].At), f.x(ld.l.Writes[mk.Writes[len(mk.Writes)-1]].At)
		if a == b {
			continue
		}
		top := max(ld.y, strip-float64(ld.l.Rows)*rowH)
		f.s.path("", "", fmt.Sprintf("M%s %sQ%s %s %s %s", n(a), n(strip), n((a+b)/2), n(top), n(b), n(strip)), "")
	}
	f.s.b.WriteString("</g></a>")
}

// seconds writes a run-clock time for tooltips and notes: whole
// seconds as such, anything else to the millisecond.
func seconds(ns int64) string {
	if ns%1e9 == 0 {
		return fmt.Sprintf("%d s", ns/1e9)
	}
	return fmt.Sprintf("%.3f s", float64(ns)/1e9)
}
