package bench

import (
	"context"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/host/netns"
)

// HelloStarts is how many times a bench starts the built-in worker for
// its exec-to-hello figure, one after another, unless Config.HelloStarts
// says otherwise: the number the target is set for.
const HelloStarts = 50

// HelloTarget is the project's target for the built-in worker's start:
// its hello line within 20 ms of its exec, median over HelloStarts
// starts on a quiet machine. A run starts a worker per client and a fresh
// one for every retired process, and waits for each hello.
const HelloTarget = 20 * time.Millisecond

// Ways a worker is started for the exec-to-hello figure.
const (
	// HelloDirect: the worker's own exec (the target's figure).
	HelloDirect = "direct"
	// HelloNamespace: through `ip netns exec` into a namespace made for
	// it, as a run in netns mode starts each worker; the namespace is
	// made before the clock starts.
	HelloNamespace = "namespace"
)

// Hello is the exec-to-hello figure of the built-in worker started one
// way: the time from the start of its exec to its hello line read by the
// controller (worker.Proc.HelloAfter), which includes the process's
// start-up, its package initialisation and its first ZooKeeper session.
type Hello struct {
	Recipe   string  `json:"recipe"`
	Way      string  `json:"way"` // HelloDirect or HelloNamespace
	Starts   int     `json:"starts"`
	MedianNS int64   `json:"median_ns"`
	P95NS    int64   `json:"p95_ns"`
	Includes string  `json:"includes"`
	RawNS    []int64 `json:"raw_ns"`
}

// settle computes the median and the 95th percentile from the samples.
func (h *Hello) settle() {
	h.Starts, h.MedianNS, h.P95NS = len(h.RawNS), Median(h.RawNS), Quantile(h.RawNS, 0.95)
}

// Quantile is the q-quantile of xs by nearest rank (0 for none): the
// smallest sample that at least q of the samples do not exceed. xs is
// not changed.
func Quantile(xs []int64, q float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(q*float64(len(s))+0.999999999) - 1 // ceil, 1-based to 0-based
	return s[min(max(rank, 0), len(s)-1)]
}

// StartFunc starts one worker and returns its handle once it has said
// hello, and how to stop it.
type StartFunc func(ctx context.Context) (p *worker.Proc, stop func(), err error)

// TimeHellos starts the worker of each of starts n times and returns
// each start's exec-to-hello times, by start. The ways take turns (one
// start of each, then again), so that a neighbour's burst on a shared
// machine slows them alike, and each worker is stopped before the next
// starts: the figure is one worker's start, not a crowd's.
func TimeHellos(ctx context.Context, n int, starts []StartFunc) ([][]int64, error) {
	times := make([][]int64, len(starts))
	for range n {
		for i, start := range starts {
			p, stop, err := start(ctx)
			if err != nil {
				return times, err
			}
			times[i] = append(times[i], int64(p.HelloAfter()))
			stop()
		}
		if err := ctx.Err(); err != nil {
			return times, err
		}
	}
	return times, nil
}

// helloWay is one way to start the worker for the figure: where (nil:
// without a namespace) and what the figure then includes.
type helloWay struct {
	name     string
	net      *netns.Network
	includes string
}

// helloWays are the ways this bench starts the worker: directly, and in
// netns mode also through a namespace of its own.
func (e *env) helloWays() []helloWay {
	ways := []helloWay{{HelloDirect, nil, "exec of the worker to its hello line read: process start, package init, first ZooKeeper session"}}
	if e.ens.Net != nil {
		ways = append(ways, helloWay{HelloNamespace, e.ens.Net,
			"the same through `ip netns exec` into a namespace made beforehand, as a run in netns mode starts a worker"})
	}
	return ways
}

// hellos measures the built-in worker's start (recipe, one worker at a
// time under its own root, as process) each of helloWays. One start of
// each way before the clock starts pages the binary in and warms the
// servers' session path.
func (e *env) hellos(ctx context.Context, recipe string, process int) ([]Hello, error) {
	root := path.Join(benchRoot, "hello-"+recipe)
	var starts []StartFunc
	var out []Hello
	for _, w := range e.helloWays() {
		starts = append(starts, func(ctx context.Context) (*worker.Proc, func(), error) {
			bw, err := e.startWorkerIn(ctx, w.net, recipe, root, process)
			if err != nil {
				return nil, nil, fmt.Errorf("worker start %s: %w", w.name, err)
			}
			return bw.p, func() { e.stopWorkers([]*benchWorker{bw}) }, nil
		})
		out = append(out, Hello{Recipe: recipe, Way: w.name, Includes: w.includes})
	}
	if _, err := TimeHellos(ctx, 1, starts); err != nil {
		return nil, err
	}
	times, err := TimeHellos(ctx, e.cfg.HelloStarts, starts)
	for i := range out {
		out[i].RawNS = times[i]
		out[i].settle()
	}
	return out, err
}
