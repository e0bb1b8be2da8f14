// Command pageload prints how long headless Chromium takes to load and
// draw report pages (internal/pageload), the median of -runs loads each:
//
//	go run ./internal/pageload/cmd -runs 5 results/lock/latest/report.html
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/zkchaos/zkchaos/internal/pageload"
)

func main() {
	runs := flag.Int("runs", 5, "loads of each page (the median is printed)")
	flag.Parse()
	if flag.NArg() == 0 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "pageload: name one or more report.html files; -runs must be at least 1")
		os.Exit(255)
	}
	browser, err := pageload.Browser()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pageload:", err)
		os.Exit(255)
	}
	all, err := pageload.Measure(context.Background(), browser, flag.Args(), *runs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pageload:", err)
		os.Exit(255)
	}
	for i, page := range flag.Args() {
		st, _ := os.Stat(page)
		m := pageload.Median(all[i])
		fmt.Printf("%s: %d bytes, %d elements; median of %d loads: DOMContentLoaded %.0f ms, load %.0f ms, drawn %.0f ms (slowest drawn %.0f ms)\n",
			page, st.Size(), m.Elements, len(all[i]), m.DOMContentLoaded, m.Load, m.Drawn,
			slices.MaxFunc(all[i], func(a, b pageload.Timing) int { return cmp.Compare(a.Drawn, b.Drawn) }).Drawn)
	}
}
