package timeline

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
)

// svg writes SVG markup. It is hand-written rather than gonum's vg
// canvas because every element here needs what a vg.Canvas cannot emit:
// an id to link to, an <a href> around it, a <title> for its tooltip and
// a class for the page's style. Every text that comes from the run (keys,
// fault targets, checker messages) goes through esc.
type svg struct {
	b bytes.Buffer
}

// esc makes s safe as text and as a quoted attribute value.
func esc(s string) string { return html.EscapeString(s) }

// n writes a coordinate with one decimal, without a trailing ".0": the
// figure's size is mostly numbers, and a tenth of a pixel is enough.
func n(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		x = 0
	}
	s := strconv.FormatFloat(math.Round(x*10)/10, 'f', 1, 64)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

func (s *svg) printf(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

// open starts an element with its class (and id, when not empty); the
// caller writes the geometry attributes in attrs, already escaped.
func (s *svg) open(tag, class, id, attrs string) {
	s.b.WriteString("<" + tag)
	if id != "" {
		s.b.WriteString(` id="` + esc(id) + `"`)
	}
	if class != "" {
		s.b.WriteString(` class="` + class + `"`)
	}
	if attrs != "" {
		s.b.WriteString(" " + attrs)
	}
	s.b.WriteString(">")
}

// elem writes a whole element with a tooltip (title, omitted when empty).
func (s *svg) elem(tag, class, id, attrs, title string) {
	s.open(tag, class, id, attrs)
	if title != "" {
		s.b.WriteString("<title>" + esc(title) + "</title>")
	}
	s.b.WriteString("</" + tag + ">")
}

// rect is a rectangle (widths below a third of a pixel are widened so
// that nothing drawn disappears).
func (s *svg) rect(class, id string, x, y, w, h float64, title string) {
	s.elem("rect", class, id, fmt.Sprintf(`x="%s" y="%s" width="%s" height="%s"`, n(x), n(y), n(max(w, 0.3)), n(h)), title)
}

// path is a path with data d.
func (s *svg) path(class, id, d, title string) {
	s.elem("path", class, id, `d="`+d+`"`, title)
}

// text is a label; anchor is start, middle or end.
func (s *svg) text(class string, x, y float64, anchor, t string) {
	a := ""
	if anchor != "start" {
		a = ` text-anchor="` + anchor + `"`
	}
	s.printf(`<text class="%s" x="%s" y="%s"%s>%s</text>`, class, n(x), n(y), a, esc(t))
}
