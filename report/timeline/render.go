package timeline

import (
	"fmt"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
)

// Options bound what is drawn one by one; the zero value takes the
// defaults.
type Options struct {
	// Width of each figure in CSS pixels (it scales down with the page).
	Width int
	// MaxPerLane is how many tenures plus writes a lane draws one by one;
	// a lane with more is summarised in time bins (the page says so),
	// except what a violation involves, which is always drawn.
	MaxPerLane int
	// Bins is how many time bins a summarised lane has across the figure
	// (the bin width is rounded to 1, 2 or 5 times a power of ten).
	Bins int
	// MaxZooms bounds the zoom strips (one per stretch of a key with
	// violations, ZoomHalf either side of each); the page says how many
	// were left out.
	MaxZooms int
	ZoomHalf time.Duration
	// MaxPerZoom bounds the tenures plus writes of one zoom strip: a
	// busier stretch is narrowed around its violation (its caption says
	// how wide it is).
	MaxPerZoom int
	// Prefix is put before every id the drawing defines, so that two
	// timelines can share a page (chaos compare); report.html leaves it
	// empty, where the ids are report/anchor's.
	Prefix string
	// StoryPage is the page holding the stories the marks link to
	// ("": this page; compare: the run's report.html).
	StoryPage string
}

// Defaults: a lane of 1,500 elements weighs about 150 KB; eight of them
// keep the timeline near the 1.5 MB it may take of a 5 MB page.
const (
	DefaultWidth      = 1200
	DefaultMaxPerLane = 1500
	DefaultBins       = 200
	DefaultMaxZooms   = 20
	DefaultZoomHalf   = 2 * time.Second
	DefaultMaxPerZoom = 200
)

func (o Options) withDefaults() Options {
	if o.Width <= 0 {
		o.Width = DefaultWidth
	}
	if o.MaxPerLane <= 0 {
		o.MaxPerLane = DefaultMaxPerLane
	}
	if o.Bins <= 0 {
		o.Bins = DefaultBins
	}
	if o.MaxZooms <= 0 {
		o.MaxZooms = DefaultMaxZooms
	}
	if o.MaxPerZoom <= 0 {
		o.MaxPerZoom = DefaultMaxPerZoom
	}
	if o.ZoomHalf <= 0 {
		o.ZoomHalf = DefaultZoomHalf
	}
	return o
}

// Drawing is the timeline as the page shows it.
type Drawing struct {
	// Main is the whole run, one lane per key (nil: nothing to draw, and
	// Notes say why).
	Main []byte
	// Zooms are the strips around violations, everything drawn one by one.
	Zooms []Zoom
	// Notes say in words what was summarised or left out.
	Notes []string
	// Unplaced are violations that have no place on the run's clock; the
	// page lists them, each under its anchor.Violation id.
	Unplaced []Mark
}

// Zoom is one strip around violations of one key.
type Zoom struct {
	Caption string
	SVG     []byte
}

// The plot area of a figure: its first LeftMargin CSS pixels hold the
// lane labels and its last RightMargin are empty. Package plots draws the
// report's figures in the same frame (at DefaultWidth), so the run clock
// of every figure lines up with the timeline's on the page.
const (
	LeftMargin  = 130
	RightMargin = 16
)

// Geometry of a figure, in CSS pixels.
const (
	rowH     = 16.0 // one row of tenures
	barH     = 12.0
	writeH   = 12.0 // the strip of writes under a lane's rows
	laneGap  = 14.0 // room for the violation marks above a lane
	topH     = 26.0 // fault labels
	axisH    = 26.0
	leftW    = LeftMargin
	rightW   = RightMargin
	labelPx  = 6.2 // width of one character of a bar label
	maxLabel = 28  // longest label drawn in a bar
)

// Render draws the model. It never fails: a model without lanes gives a
// Drawing with only Notes.
func Render(m Model, opt Options) Drawing {
	opt = opt.withDefaults()
	var d Drawing
	if m.Workload == "" {
		d.Notes = append(d.Notes, "No locks: the history has neither lock grants nor leader campaigns (the config workload), so there is no ownership to draw.")
		return d
	}
	if m.UnplacedWrites > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d writes of the apply log are not drawn: without the run's start on the register's wall clock (test.json start_wall_ns) they cannot be put on the run's clock.", m.UnplacedWrites))
	}
	for _, mk := range m.Marks {
		if !mk.Placed {
			d.Unplaced = append(d.Unplaced, mk)
		}
	}
	if len(m.Lanes) == 0 {
		d.Notes = append(d.Notes, "No lane: the history has no grant and the apply log no write.")
		return d
	}
	f := newFrame(opt.Width, 0, max(m.End, 1), true, opt)
	var lds []*laneDraw
	var summed []string
	binW := int64(0)
	for i, l := range m.Lanes {
		ld := planLane(l, i, m.Marks, opt, f)
		if ld.bins != nil {
			summed, binW = append(summed, ld.note), ld.bins.width
		}
		lds = append(lds, ld)
	}
	if len(summed) > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("Summarised: %d of %d lanes have more than %d tenures and writes, too many to draw each; "+
			"they are drawn in %s bins (shade: the share of the bin the key was held, tooltip: grants and processes; bar under the lane: writes per bin, rejected in red). "+
			"Drawn one by one all the same: the tenures and writes of every violation, tenures whose holder a fault acted on or that was retired, and rejected writes. %s.",
			len(summed), len(m.Lanes), opt.MaxPerLane, seconds(binW), strings.Join(summed, "; ")))
	}
	f.draw(lds, m.Faults, fmt.Sprintf("lock ownership timeline, %d lanes", len(lds)))
	d.Main = f.s.b.Bytes()
	zs, note := zooms(m, opt, f.usedW)
	d.Zooms = zs
	if note != "" {
		d.Notes = append(d.Notes, note)
	}
	return d
}

// frame is one figure being drawn: its clock span and what it has
// already named (an id may appear once on the page).
type frame struct {
	s      svg
	width  int
	t0, t1 int64
	plotW  float64
	// ids: the main figure names its marks (anchor.Violation); zoom
	// strips only link them. usedW is every write id already drawn.
	ids   bool
	usedW map[int64]bool
	pfx   string
	// idPfx and storyPage are Options.Prefix and Options.StoryPage.
	idPfx, storyPage string
}

func newFrame(width int, t0, t1 int64, ids bool, opt Options) *frame {
	if t1 <= t0 {
		t1 = t0 + int64(time.Second)
	}
	return &frame{width: width, t0: t0, t1: t1, plotW: float64(width) - leftW - rightW, ids: ids, usedW: map[int64]bool{},
		pfx: opt.Prefix + "tl", idPfx: opt.Prefix, storyPage: opt.StoryPage}
}

// x places a run-clock time, clamped to the plot.
func (f *frame) x(t int64) float64 {
	t = min(max(t, f.t0), f.t1)
	return leftW + float64(t-f.t0)/float64(f.t1-f.t0)*f.plotW
}

// draw writes the whole figure: the lanes' backgrounds and the faults
// under everything, then the grid, the lanes, and the violation marks on
// top.
func (f *frame) draw(lds []*laneDraw, faults []checker.FaultWindow, label string) {
	y := topH + laneGap
	for _, ld := range lds {
		ld.y = y
		y += ld.height() + laneGap
	}
	h := y + axisH - laneGap
	f.s.printf(`<svg class="tl" width="%d" height="%s" viewBox="0 0 %d %s" role="img" aria-label="%s">`, f.width, n(h), f.width, n(h), esc(label))
	f.s.printf(`<defs><pattern id="%shatch" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="1.6" height="4" fill="#263238"/></pattern></defs>`, f.pfx)
	f.s.b.WriteString(style)
	for _, ld := range lds {
		f.s.rect("tl-lane", "", leftW, ld.y, f.plotW, ld.height(), "")
	}
	f.faults(faults, topH, h-axisH)
	f.axis(topH, h-axisH)
	for _, ld := range lds {
		f.lane(ld)
	}
	for _, ld := range lds {
		for _, mk := range ld.marks {
			f.mark(ld, mk)
		}
	}
	f.s.b.WriteString("</svg>")
}

// style is the figures' look; the classes are prefixed so the page's
// own style cannot clash.
const style = `<style>
.tl text{font:11px system-ui,sans-serif;fill:#222}
.tl .tl-key{font-weight:bold}
.tl .tl-sub{font-size:9px;fill:#666}
.tl .tl-lbl{font-size:10px;fill:#fff;stroke:#0d47a1;stroke-width:2.5px;paint-order:stroke;pointer-events:none}
.tl .tl-flbl{font-size:9px;fill:#3b3b8f}
.tl-lane{fill:#f6f6f6}
.tl-fault{fill:#7070d0;fill-opacity:.19}
.tl-grid{stroke:#ddd;stroke-width:1}
.tl-b0{fill:#1565c0}.tl-b1{fill:#42a5f5}
.tl-hold{fill:#1565c0}
.tl-ret{fill:#fff;fill-opacity:.55;stroke:#1565c0;stroke-dasharray:3 2}
.tl-w{stroke:#212121;stroke-width:1.4}
.tl-wr{stroke:#c62828;stroke-width:2;fill:none}
.tl-wrl{stroke:#c62828;stroke-width:1;stroke-dasharray:2 2}
.tl-wv{fill:#c62828;stroke:#fff;stroke-width:.8}
.tl-wbin{fill:#424242}.tl-wrbin{fill:#c62828}
.tl-mark{stroke:#c62828;stroke-width:2;fill:none}
.tl-mark .tl-tri{fill:#c62828;stroke:none}
.tl-inv{stroke:#c62828;stroke-width:2.2;fill:none}
</style>`
