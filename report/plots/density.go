package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// densityLevels is how many shades a density draws: enough to tell a
// busy cell from a quiet one, few enough that each shade is one path.
const densityLevels = 8

// density draws counts on a grid of time bins (columns, width dx from
// 0 on the run's clock) and rows (row j spans edges[j] to edges[j+1] on
// the y axis, in data units, so a log axis works), in one colour whose
// opacity grows with the logarithm of a cell's count. Adjacent cells of
// a row at the same shade are drawn as one rectangle and every shade as
// one SVG path, so its size grows with how the density changes, not
// with how many operations it counts: that is what bounds a figure of a
// long run (gonum's HeatMap draws one element per cell).
type density struct {
	colour color.RGBA
	dx     float64   // seconds
	end    float64   // the run's end (s): the last column stops there
	edges  []float64 // len(rows)+1
	cells  [][]int   // [row][column]
	max    int
}

// newDensity is an empty density of rows×cols cells.
func newDensity(c color.RGBA, dx, end float64, edges []float64, cols int) *density {
	d := &density{colour: c, dx: dx, end: end, edges: edges, cells: make([][]int, len(edges)-1)}
	for j := range d.cells {
		d.cells[j] = make([]int, cols)
	}
	return d
}

// add counts one item in row at time x (s): the column x falls in, the
// last for a time at the very end.
func (d *density) add(row int, x float64) {
	cols := d.cells[row]
	col := min(max(int(x/d.dx), 0), len(cols)-1)
	cols[col]++
	d.max = max(d.max, cols[col])
}

// level is the shade of a count: 0 for none, else 1..densityLevels on a
// log scale up to the busiest cell, so one stray operation still shows.
func (d *density) level(n int) int {
	if n == 0 {
		return 0
	}
	if d.max <= 1 {
		return densityLevels
	}
	l := int(math.Ceil(densityLevels * math.Log1p(float64(n)) / math.Log1p(float64(d.max))))
	return min(max(l, 1), densityLevels)
}

// shade is the colour of a level.
func (d *density) shade(l int) color.NRGBA {
	return color.NRGBA{R: d.colour.R, G: d.colour.G, B: d.colour.B, A: uint8(255 * l / densityLevels)}
}

// Plot implements plot.Plotter.
func (d *density) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	paths := make([]vg.Path, densityLevels+1)
	for j, row := range d.cells {
		y0, y1 := trY(d.edges[j]), trY(d.edges[j+1])
		for i := 0; i < len(row); {
			l := d.level(row[i])
			k := i + 1
			for k < len(row) && d.level(row[k]) == l {
				k++
			}
			if l > 0 {
				x0, x1 := trX(float64(i)*d.dx), trX(min(float64(k)*d.dx, d.end))
				p := &paths[l]
				p.Move(vg.Point{X: x0, Y: y0})
				p.Line(vg.Point{X: x1, Y: y0})
				p.Line(vg.Point{X: x1, Y: y1})
				p.Line(vg.Point{X: x0, Y: y1})
				p.Close()
			}
			i = k
		}
	}
	for l, path := range paths {
		if len(path) > 0 {
			c.SetColor(d.shade(l))
			c.Fill(path)
		}
	}
}

// DataRange implements plot.DataRanger: the grid's extent.
func (d *density) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, d.end, d.edges[0], d.edges[len(d.edges)-1]
}

// Thumbnail implements plot.Thumbnailer: a patch at middle shade.
func (d *density) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(d.shade(densityLevels/2), []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}
