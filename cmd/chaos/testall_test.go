package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/run/matrix"
)

// TestMatrixLimits: --time-limit sets the time of the cells that run
// their time, never the limit of those that stop at their first
// violation; --violation-limit sets that limit, and 0 keeps each cell's
// own (CURATOR-696's is longer than the default).
func TestMatrixLimits(t *testing.T) {
	cells := func() []matrix.Cell {
		var out []matrix.Cell
		for _, c := range matrix.Default("/bin/chaos") {
			switch c.Name() {
			case "seed/pause-holder/fencing-on", "seed/pause-holder/fencing-off", "election:curator/pause-zk-majority/fencing-on":
				out = append(out, c)
			}
		}
		if len(out) != 3 {
			t.Fatalf("%d cells found, want 3", len(out))
		}
		return out
	}
	tail := func(c matrix.Cell) string {
		args := c.RunArgs(1)
		for i := len(args) - 2; i >= 0; i-- {
			if args[i] == "--time-limit" {
				return args[i+1]
			}
		}
		return ""
	}
	got := withLimits(cells(), matrixRun{limit: 7 * time.Second})
	if w := []string{tail(got[0]), tail(got[1]), tail(got[2])}; strings.Join(w, " ") != "7s 2m0s 5m0s" {
		t.Errorf("--time-limit 7s: the cells' time limits %v, want 7s for the fenced one, the stop limits for the others", w)
	}
	got = withLimits(cells(), matrixRun{stopLimit: 3 * time.Minute})
	if w := []string{tail(got[0]), tail(got[1]), tail(got[2])}; w[0] == "3m0s" || w[1] != "3m0s" || w[2] != "3m0s" {
		t.Errorf("--violation-limit 3m: the cells' time limits %v, want 3m0s for the two that stop at their first violation", w)
	}
}
