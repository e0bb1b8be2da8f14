package browser

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"
)

// Timing is one load of a page as the page's own Navigation Timing entry
// measures it, from the navigation's start: the browser's figures, not a
// guess from outside. Every reader of a page's load (the tests' bound,
// internal/testkit/pageload's figures) reads it here.
type Timing struct {
	// DOMContentLoaded: the HTML is parsed (inline SVG included).
	DOMContentLoaded time.Duration
	// Load: the load event ended.
	Load time.Duration
	// Drawn: two animation frames after the load event, so layout and
	// the first paint of the whole page are done.
	Drawn time.Duration
	// Elements is how many elements the document holds once drawn.
	Elements int
}

// timingJS waits for the load event to end (Navigate returns when it is
// fired, its end follows), then for two animation frames, and reads the
// navigation entry; null when the page has none.
const timingJS = `new Promise(done => {
	const nav = () => performance.getEntriesByType('navigation')[0];
	const read = () => { const n = nav(); done({dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd,
		drawn: performance.now(), elements: document.getElementsByTagName('*').length}); };
	const wait = () => {
		const n = nav();
		if (!n) done(null);
		else if (n.loadEventEnd > 0) requestAnimationFrame(() => requestAnimationFrame(read));
		else setTimeout(wait, 10);
	};
	wait();
})`

// msTiming is timingJS's answer, in ms.
type msTiming struct {
	DCL      float64 `json:"dcl"`
	Load     float64 `json:"load"`
	Drawn    float64 `json:"drawn"`
	Elements int     `json:"elements"`
}

// readTiming reads the timing of the page loaded in tab once it is
// drawn; tab's context bounds the wait.
func readTiming(tab context.Context) (Timing, error) {
	t, err := chromedp.Run(tab, chromedp.Evaluate[*msTiming](timingJS, chromedp.EvalAwaitPromise))
	if err != nil {
		return Timing{}, fmt.Errorf("read the navigation timing: %w", err)
	}
	if t == nil {
		return Timing{}, errors.New("read the navigation timing: the page has no navigation entry")
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return Timing{DOMContentLoaded: ms(t.DCL), Load: ms(t.Load), Drawn: ms(t.Drawn), Elements: t.Elements}, nil
}
