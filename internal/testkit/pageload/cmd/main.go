// Command pageload prints how long headless Chromium takes to load and
// draw report pages (internal/testkit/pageload), the median of -runs loads each:
//
//	go run ./internal/pageload/cmd -runs 5 results/lock/latest/report.html
//
// The browser is internal/testkit/browser's: $CHROMIUM when set, else Debian's
// chromium on PATH.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/browser"
	"github.com/zkchaos/zkchaos/internal/testkit/pageload"
)

func main() {
	runs := flag.Int("runs", 5, "loads of each page (the median is printed)")
	flag.Parse()
	if flag.NArg() == 0 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "pageload: name one or more report.html files; -runs must be at least 1")
		os.Exit(255)
	}
	chromium, err := browser.Find()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pageload:", err)
		os.Exit(255)
	}
	all, err := pageload.Measure(context.Background(), chromium, flag.Args(), *runs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pageload:", err)
		os.Exit(255)
	}
	for i, page := range flag.Args() {
		st, _ := os.Stat(page)
		m := pageload.Median(all[i])
		slowest := slices.MaxFunc(all[i], func(a, b browser.Timing) int { return cmp.Compare(a.Drawn, b.Drawn) })
		fmt.Printf("%s: %d bytes, %d elements; median of %d loads: DOMContentLoaded %.0f ms, load %.0f ms, drawn %.0f ms (slowest drawn %.0f ms)\n",
			page, st.Size(), m.Elements, len(all[i]), ms(m.DOMContentLoaded), ms(m.Load), ms(m.Drawn), ms(slowest.Drawn))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
