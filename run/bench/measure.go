package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

// errFailed marks an operation that completed without success (an
// acquire that timed out, a write the register refused): counted as
// failed, the loop goes on. Any other error stops the measurement.
var errFailed = errors.New("operation failed")

// A window counts at least minOps operations: on a loaded machine one
// of its length may see none complete (a hot key's eight contenders,
// each section five ZooKeeper round trips and two register calls), and
// a rate of 0 says nothing about the subject, only about the machine.
// So the window stays open past its length, up to maxStretch times it,
// until it has counted one; the rate is over the time it was open. Only
// an empty window is stretched: waiting for ten, --quick beside a loaded
// suite took 105 s, against 45–64 s before.
const (
	minOps     = 1
	maxStretch = 10
)

// window runs op on n clients in a loop and counts the operations that
// complete inside the measured window, which opens after warmup (the
// sessions and the servers' JIT settle) and lasts length, or longer
// until minOps have completed (ok or failed). An operation is
// never cut short: the loops stop between operations, so a worker is
// never left with an answer nobody waits for. ctx ending stops early with
// its error. probe, when not nil, is read as the window opens and as it
// closes, and the figure gets its CPU per operation.
func window(ctx context.Context, n int, warmup, length time.Duration, probe func() costSample, op func(ctx context.Context, client int) error) (Figure, error) {
	var stop atomic.Bool
	oks := make([]atomic.Int64, n)
	fails := make([]atomic.Int64, n)
	errs := make([]error, n)
	broke, breakNow := context.WithCancel(ctx)
	defer breakNow()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && broke.Err() == nil {
				switch err := op(ctx, i); {
				case err == nil:
					oks[i].Add(1)
				case errors.Is(err, errFailed):
					fails[i].Add(1)
				default:
					errs[i] = fmt.Errorf("client %d: %w", i, err)
					breakNow()
					return
				}
			}
		}()
	}
	sum := func(cs []atomic.Int64) (s int64) {
		for i := range cs {
			s += cs[i].Load()
		}
		return s
	}
	if probe == nil {
		probe = func() costSample { return costSample{requests: -1} }
	}
	ctxsleep.Sleep(broke, warmup)
	ok0, failed0, cpu0, t0 := sum(oks), sum(fails), probe(), time.Now()
	ctxsleep.Sleep(broke, length)
	for sum(oks)+sum(fails)-ok0-failed0 < minOps && time.Since(t0) < maxStretch*length {
		if !ctxsleep.Sleep(broke, length/20) {
			break
		}
	}
	ok1, failed1, cpu1, t1 := sum(oks), sum(fails), probe(), time.Now()
	stop.Store(true)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Figure{}, err
	}
	if err := ctx.Err(); err != nil {
		return Figure{}, err
	}
	f := Figure{Clients: n, Ops: ok1 - ok0, Failed: failed1 - failed0, CPUPerOp: perOp(cpu0.cpu, cpu1.cpu, ok1-ok0),
		RequestsPerOp: requestsPerOp(cpu0, cpu1, ok1-ok0)}
	f.rate(t1.Sub(t0))
	return f, nil
}

// keyOf is the lock key of client i in layout (prefix keeps subjects'
// register keys apart: each recipe's tokens start over under its own
// root, and the register fences per key).
func keyOf(prefix, layout string, i int) string {
	if layout == Hot {
		return prefix + "-hot"
	}
	return fmt.Sprintf("%s-k%d", prefix, i%SpreadKeys)
}
