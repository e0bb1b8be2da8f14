package plots

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
)

// Figure is one drawn figure: the SVG to inline and the caption to print
// under it. The caption says what the figure shows and, for a long or
// busy run, how it was aggregated: a figure never drops data silently.
type Figure struct {
	SVG     []byte
	Caption string
}

// The bounds that keep every figure's SVG small whatever the run's
// length, so that the report stays one file that opens at once
// (measured in docs/measurements.md, "Report and pages").
const (
	// MaxPoints is the most marks a figure draws one by one: a mark is
	// one SVG element of about 100 bytes, so 5 000 marks are about
	// 0.5 MB. A 60 s run of chaos run's defaults has about 3 800
	// operations: it is drawn point by point. Past the bound, the
	// largest series are binned (see density) until the rest fits.
	MaxPoints = 5000
	// MaxBins is the most time bins a per-time series draws: about the
	// width of the plot in points, so a finer bin would not show.
	MaxBins = 600
	// MaxDensityCols is the most time bins of a density, whose cells are
	// shaded rectangles: half as many as MaxBins keeps each visible.
	MaxDensityCols = 300
)

// binSteps are the bin widths a figure may choose, in seconds: round
// numbers, so a reader can count along the axis.
var binSteps = []int64{1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600}

// binWidth is the narrowest bin (ns) that splits [0, end] into at most
// maxBins bins: one second for any run up to maxBins seconds.
func binWidth(end int64, maxBins int) int64 {
	for _, s := range binSteps {
		if end/(s*1e9)+1 <= int64(maxBins) {
			return s * 1e9
		}
	}
	last := binSteps[len(binSteps)-1] * 1e9
	return (end/int64(maxBins)/last + 1) * last
}

// binsOf is how many bins of width w cover [0, end].
func binsOf(end, w int64) int { return int(end/w) + 1 }

// perBin names a bin width for titles and captions: "per second",
// "per 5 s bin".
func perBin(w int64) string {
	if w == 1e9 {
		return "per second"
	}
	return "per " + span(w) + " bin"
}

// span writes a bin width: "5 s", "2 min".
func span(w int64) string {
	if w >= 60e9 && w%60e9 == 0 {
		return fmt.Sprintf("%d min", w/60e9)
	}
	return strconv.FormatFloat(float64(w)/1e9, 'f', -1, 64) + " s"
}

// oneByOne says which of the series (their sizes) are drawn mark by
// mark: the smallest first while the total stays within bound, the
// rest are binned. A rare outcome (a failure, an expiry) thus stays a
// visible point beside a binned mass of ordinary ones.
func oneByOne(sizes []int, bound int) []bool {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[a], sizes[b]) })
	out := make([]bool, len(sizes))
	total := 0
	for _, i := range order {
		if total+sizes[i] > bound {
			break
		}
		total += sizes[i]
		out[i] = true
	}
	return out
}

// count writes n with its thousands apart ("100 021"), as the captions
// print counts.
func count(n int) string {
	s := strconv.Itoa(n)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ' ')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// plural is "1 completion", "2 completions".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%s %ss", count(n), what)
}
