package deaths

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// table logs the campaign's figures as two markdown tables (the form
// docs/measurements.md keeps them in): per kill kind the deaths, those
// that left anything, the longest time to clean and chaos check's exits;
// then per kill kind the moments the deaths came at.
func (c *campaign) table() {
	var b strings.Builder
	fmt.Fprintf(&b, "backend %s: %d deaths (%d runs ended before their kill, not counted), first seed %d\n\n", c.b.name, len(c.deaths), c.missed, c.s.seed)
	b.WriteString("| kill | deaths | leftovers | longest to clean | chaos check exits |\n| --- | --- | --- | --- | --- |\n")
	moments := map[string]map[string]int{}
	for _, k := range kinds {
		n, left, codes := 0, 0, map[int]int{}
		var longest time.Duration
		for _, d := range c.deaths {
			if d.kind != k {
				continue
			}
			n++
			if len(d.left) > 0 {
				left++
			}
			longest = max(longest, d.took)
			codes[d.code]++
			if moments[d.reached] == nil {
				moments[d.reached] = map[string]int{}
			}
			moments[d.reached][k]++
		}
		var cs []string
		for _, code := range slices.Sorted(maps.Keys(codes)) {
			cs = append(cs, fmt.Sprintf("%d×%d", codes[code], code))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s |\n", k, n, left, longest.Round(10*time.Millisecond), strings.Join(cs, ", "))
	}
	b.WriteString("\n| moment reached | " + strings.Join(kinds, " | ") + " |\n| --- |" + strings.Repeat(" --- |", len(kinds)) + "\n")
	for _, m := range append(targets, "report") {
		if moments[m] == nil {
			continue
		}
		row := "| " + m
		for _, k := range kinds {
			row += fmt.Sprintf(" | %d", moments[m][k])
		}
		b.WriteString(row + " |\n")
	}
	c.t.Log("\n" + b.String())
}
