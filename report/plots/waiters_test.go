package plots

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/observe/monitor"
)

// waitersSamples: SKU-1 queues 0, 2, (unread), 1 waiters; SKU-2 none.
func waitersSamples() []monitor.Sample {
	dir := func(key string, children int) monitor.Dir {
		return monitor.Dir{Path: "/locks/" + key, Children: make([]monitor.Child, children)}
	}
	return []monitor.Sample{
		{TimeNS: 50e6, Dirs: []monitor.Dir{dir("SKU-1", 1), dir("SKU-2", 0)}},
		{TimeNS: 150e6, Dirs: []monitor.Dir{dir("SKU-1", 3), dir("SKU-2", 1)}},
		{TimeNS: 250e6, Dirs: []monitor.Dir{{Path: "/locks/SKU-1", Error: "no answer"}, dir("SKU-2", 1)}},
		{TimeNS: 350e6, Dirs: []monitor.Dir{dir("SKU-1", 2), dir("SKU-2", 0)}},
	}
}

func TestWaiters(t *testing.T) {
	// SKU-1 in two pieces (its unread sample is a gap), SKU-2 in one; the
	// sample after the history's end (505 ms) is left out.
	ss := append(waitersSamples(), monitor.Sample{TimeNS: 600e6, Dirs: []monitor.Dir{{Path: "/locks/SKU-3"}}})
	order, lines := waiterSeries(ss, 505e6)
	want := map[string][]plotter.XYs{
		"/locks/SKU-1": {{{X: 0.05, Y: 0}, {X: 0.15, Y: 2}}, {{X: 0.35, Y: 1}}},
		"/locks/SKU-2": {{{X: 0.05, Y: 0}, {X: 0.15, Y: 0}, {X: 0.25, Y: 0}, {X: 0.35, Y: 0}}},
	}
	if !slices.Equal(order, []string{"/locks/SKU-1", "/locks/SKU-2"}) || !reflect.DeepEqual(lines, want) {
		t.Errorf("series %v %v\nwant %v", order, lines, want)
	}
	fig, err := Waiters(lockview.Of(sample()), waitersSamples())
	svg := fig.SVG
	if err != nil || !bytes.Contains(svg, []byte("SKU-1")) || !bytes.Contains(svg, []byte("pause")) {
		t.Errorf("svg without its lines' legend or the fault: %v", err)
	}
	noDirs := []monitor.Sample{{TimeNS: 1, Dirs: []monitor.Dir{{Path: "/l/a", Error: "timeout"}}}}
	if _, err := Waiters(lockview.Of(sample()), noDirs); !errors.Is(err, ErrNothingToDraw) {
		t.Errorf("no directory read: %v, want ErrNothingToDraw", err)
	}
}
