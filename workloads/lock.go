// Package workloads says what the clients of a run ask for. A workload
// drives a Client (the controller's view of one logical process) through
// operations; it neither records history nor knows about processes, which
// is the controller's job.
package workloads

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zkchaos/zkchaos/history"
)

// Op is one operation to perform.
type Op struct {
	F       string
	Key     string
	Value   *int64        // write: the value to write
	Timeout time.Duration // acquire: how long to wait for the lock
	Work    time.Duration // write: the holder's work between its check and its write
}

// Result is an operation's completion as the controller recorded it.
type Result struct {
	Type  history.Type // ok, fail or info
	Value *history.Value
	Error string
}

// Phase is where a client is in its critical section; the nemesis uses it
// to aim at the moment a pause does the most harm.
type Phase int

// Phases of the lock workload.
const (
	Idle Phase = iota
	Holding
	// Critical: the write is under way and the worker is doing its
	// protected work, having checked the lock: a pause now makes the write
	// that follows stale.
	Critical
)

// Client performs operations for one logical process. Do records the
// invocation and completion; a completion of type info retires the process
// (the next Do runs on a fresh one).
type Client interface {
	Do(ctx context.Context, op Op) Result
	SetPhase(phase Phase, key string, token int64)
}

// Lock is the lock workload of the design: K keys, each lock guarding the
// register key of the same name; a critical section is acquire, read,
// write read+1, release. The hold time is spent inside the worker's write,
// between its check of the lock and its register call (see
// worker.Request.WorkMS): that is where a real holder does its work, and
// where a GC pause turns its write stale.
type Lock struct {
	Keys           []string
	Hold           time.Duration
	Think          time.Duration
	AcquireTimeout time.Duration
}

// KeyNames are the keys SKU-1..SKU-k; the lock of SKU-i is
// <root>/SKU-i, as in the seed's /locks/inventory/SKU-1.
func KeyNames(k int) []string {
	keys := make([]string, k)
	for i := range keys {
		keys[i] = fmt.Sprintf("SKU-%d", i+1)
	}
	return keys
}

// Step runs one critical section on a random key. It returns early after
// any info completion: the process that performed it is retired, and what
// it was doing is no longer this logical process's business.
func (l *Lock) Step(ctx context.Context, c Client, r *rand.Rand) {
	key := l.Keys[r.IntN(len(l.Keys))]
	defer c.SetPhase(Idle, "", 0)
	acq := c.Do(ctx, Op{F: history.FAcquire, Key: key, Timeout: l.AcquireTimeout})
	if acq.Type != history.OK {
		l.think(ctx)
		return
	}
	token := int64(0)
	if acq.Value != nil && acq.Value.Token != nil {
		token = *acq.Value.Token
	}
	c.SetPhase(Holding, key, token)
	rd := c.Do(ctx, Op{F: history.FRead, Key: key})
	if rd.Type == history.Info {
		return
	}
	if rd.Type == history.OK && rd.Value != nil && rd.Value.N != nil {
		c.SetPhase(Critical, key, token)
		next := *rd.Value.N + 1
		wr := c.Do(ctx, Op{F: history.FWrite, Key: key, Value: &next, Work: l.Hold})
		if wr.Type == history.Info {
			return
		}
		c.SetPhase(Holding, key, token)
	}
	if rel := c.Do(ctx, Op{F: history.FRelease, Key: key}); rel.Type == history.Info {
		return
	}
	c.SetPhase(Idle, "", 0)
	l.think(ctx)
}

func (l *Lock) think(ctx context.Context) { sleep(ctx, l.Think) }

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
