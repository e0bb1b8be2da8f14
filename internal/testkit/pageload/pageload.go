// Package pageload measures how long headless Chromium takes to load and
// draw a report page from disk, for the report's bound (a page loads in
// under 2 s, docs/measurements.md "Report and pages"). It is a thin user
// of internal/testkit/browser, which owns starting Chromium (and its guard: a
// page measured reaches nothing but file:// and loopback, as a report
// must) and reading a page's own navigation timing; this package only
// repeats the loads and picks the median.
package pageload

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/internal/testkit/browser"
)

// loadLimit bounds one load of a page: a page past it is broken, not slow.
const loadLimit = time.Minute

// Measure loads each page runs times, each in a fresh tab of one headless
// Chromium started from chromium (browser.Find's path), and returns every
// timing (pages in order, runs within).
func Measure(ctx context.Context, chromium string, pages []string, runs int) ([][]browser.Timing, error) {
	b, err := browser.Start(ctx, chromium) // started before any timing
	if err != nil {
		return nil, err
	}
	defer b.Close()
	out := make([][]browser.Timing, len(pages))
	for i, page := range pages {
		for range runs {
			t, err := loadOnce(ctx, b, page)
			if err != nil {
				return nil, fmt.Errorf("measure: %w", err)
			}
			out[i] = append(out[i], t)
		}
	}
	return out, nil
}

// loadOnce opens the page at path in a new tab of b, which returns once
// it is drawn, and closes it.
func loadOnce(ctx context.Context, b *browser.Browser, path string) (browser.Timing, error) {
	ctx, cancel := context.WithTimeout(ctx, loadLimit)
	defer cancel()
	p, err := b.OpenFile(ctx, path)
	if err != nil {
		return browser.Timing{}, err
	}
	p.Close()
	return p.Timing, nil
}

// Median is the load of median drawn time among ts (not empty), by the
// nearest-rank rule every figure of a run uses (stats.NearestRank).
func Median(ts []browser.Timing) browser.Timing {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b browser.Timing) int { return cmp.Compare(a.Drawn, b.Drawn) })
	drawn := make([]int64, len(s))
	for i, t := range s {
		drawn[i] = int64(t.Drawn)
	}
	m := stats.NearestRank(drawn, 0.5)
	return s[slices.Index(drawn, m)]
}
