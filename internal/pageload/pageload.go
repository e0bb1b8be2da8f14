// Package pageload measures how long headless Chromium takes to load and
// draw a report page from disk, for the report's bound (a page loads in
// under 2 s, docs/architecture.md "Figures at scale"). It drives the
// browser over the DevTools protocol (chromedp) and reads the page's own
// navigation timing, so the figure is the browser's, not a guess from
// outside; the page itself runs no script.
package pageload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/chromedp/chromedp"
)

// Timing is one load of a page, in ms from the navigation's start.
type Timing struct {
	// DOMContentLoaded: the HTML is parsed (inline SVG included).
	DOMContentLoaded float64 `json:"dcl"`
	// Load: the load event ended.
	Load float64 `json:"load"`
	// Drawn: two animation frames after load, so layout and the first
	// paint of the whole page are done.
	Drawn float64 `json:"drawn"`
	// Elements is how many elements the document holds.
	Elements int `json:"elements"`
}

// Browser finds Chromium: $CHROMIUM, else chromium or chromium-browser
// on PATH.
func Browser() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH (set CHROMIUM to the browser)")
}

// timingJS reads the navigation timing once two frames have been drawn
// after the load event.
const timingJS = `new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {
	const n = performance.getEntriesByType('navigation')[0];
	done({dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd, drawn: performance.now(),
		elements: document.getElementsByTagName('*').length});
})))`

// Measure loads each page runs times, each in a fresh tab of one headless
// browser, and returns every timing (pages in order, runs within).
func Measure(ctx context.Context, browser string, pages []string, runs int) ([][]Timing, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1024))
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil { // start the browser before any timing
		return nil, fmt.Errorf("start %s: %w", browser, err)
	}
	out := make([][]Timing, len(pages))
	for i, page := range pages {
		abs, err := filepath.Abs(page)
		if err != nil {
			return nil, fmt.Errorf("page %s: %w", page, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("page: %w", err)
		}
		for range runs {
			t, err := loadOnce(bctx, "file://"+abs)
			if err != nil {
				return nil, fmt.Errorf("load %s: %w", page, err)
			}
			out[i] = append(out[i], t)
		}
	}
	return out, nil
}

// loadOnce opens url in a new tab, waits for it to be drawn and reads
// its timing.
func loadOnce(bctx context.Context, url string) (Timing, error) {
	tctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	tctx, cancelTimeout := context.WithTimeout(tctx, time.Minute)
	defer cancelTimeout()
	if err := chromedp.Do(tctx, chromedp.Navigate(url)); err != nil {
		return Timing{}, err
	}
	return chromedp.Run(tctx, chromedp.Evaluate[Timing](timingJS, chromedp.EvalAwaitPromise))
}

// Median is the timing of median drawn time among ts (non-empty).
func Median(ts []Timing) Timing {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b Timing) int { return cmp.Compare(a.Drawn, b.Drawn) })
	return s[len(s)/2]
}
