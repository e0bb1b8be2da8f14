package workloads

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/suite"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

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
	// Root is the persistent parent of the locks (--lock-root).
	Root string
}

func init() {
	register(&Lock{}, func(s Settings) (Workload, error) {
		return &Lock{Keys: KeyNames(s.Keys), Hold: s.Hold, Think: s.Think, AcquireTimeout: s.AcquireTimeout, Root: s.LockRoot}, nil
	})
}

// LockName is the lock workload's --workload value, the default.
const LockName = "lock"

// Name implements Workload.
func (l *Lock) Name() string { return LockName }

// Nodes are the lock root (with its parents) and one node per key, which
// the controller creates protected before any worker starts: the parent must exist and be
// ACL-protected, or a client could delete it or plant fake children
// (docs/background.md#the-queue-lock-recipe).
func (l *Lock) Nodes() []Node {
	var ns []Node
	for p := l.Root; p != "/" && p != "."; p = path.Dir(p) {
		ns = append(ns, Node{Path: p})
	}
	slices.Reverse(ns)
	for _, k := range l.Keys {
		ns = append(ns, Node{Path: path.Join(l.Root, k)})
	}
	return ns
}

// Final has every client read every key from the register once more
// (final-read), after every fault was undone: what the run ended with.
func (l *Lock) Final(ctx context.Context, e End) {
	for _, c := range e.Clients() {
		for _, k := range l.Keys {
			e.FinalRead(ctx, c, k)
		}
	}
}

// Checkers are the lock's: the resource's (double-writer, wrong-token,
// register), the lock's own (liveness, grant-overlap, token-order, herd,
// mutex) and the run's numbers, with integrity first.
func (l *Lock) Checkers() []checker.Checker { return suite.All() }

// DefaultGate is the resource checkers' answer to "was my data
// corrupted?" (see suite.DefaultGate).
func (l *Lock) DefaultGate() []string { return slices.Clone(suite.DefaultGate) }

// Traits: the lock runs on every service and resource, and its znodes
// are all under its root.
func (l *Lock) Traits() Traits {
	return Traits{OtherServices: true, Postgres: true, UnderRunRoot: true}
}

// LockFaults are the faults of the nemesis a lock is tested under: a
// correct lock, fenced, stays valid under each.
var LockFaults = []string{"pause-holder", "pause-worker", "expire-holder", "isolate-holder",
	"pause-zk-leader", "pause-zk", "kill-zk",
	"partition-zk-leader", "partition-zk-halves", "partition-zk-ring", "partition-zk-bridge", "rogue-client"}

// gateValid are the checkers a correct lock client must satisfy in every
// fenced gate cell: the resource checkers plus the lock-level ones that
// judge the client itself (two holders, tokens out of order, a waiter
// never served). Herd is reported, never judged: a worker need not report
// its wake-ups (docs/worker-protocol.md), so its silence proves nothing.
func gateValid() map[string]checker.Validity {
	m := map[string]checker.Validity{lock.NameGrantOverlap: checker.Valid, lock.NameTokenOrder: checker.Valid, lock.NameLiveness: checker.Valid}
	for _, n := range suite.DefaultGate {
		m[n] = checker.Valid
	}
	return m
}

// GateCells are the standard cells of a correct lock client: valid
// without faults and, fenced, under every fault of LockFaults; unfenced,
// caught under pause-holder and expire-holder, which proves the harness
// sees the client's writes (a subject whose writes never reach the
// resource would pass every fenced cell). The quick set is the baseline
// and the unfenced pause-holder.
func (l *Lock) GateCells() []GateCell {
	cells := []GateCell{{Nemesis: []string{"none"}, Fenced: true, Quick: true, Expect: gateValid(),
		Why: "baseline: no faults, nothing to find"}}
	for _, f := range LockFaults {
		cells = append(cells, GateCell{Nemesis: []string{f}, Fenced: true, Expect: gateValid(),
			Why: "a correct lock, fenced, stays correct under " + f})
	}
	caught := func() map[string]checker.Validity {
		return map[string]checker.Validity{fence.NameDoubleWriter: checker.Invalid}
	}
	return append(cells,
		GateCell{Nemesis: []string{"pause-holder"}, Quick: true, Expect: caught(),
			Why: "without fencing the paused holder's stale write lands: the harness sees the client's writes"},
		GateCell{Nemesis: []string{"expire-holder"}, Expect: caught(),
			Why: "without fencing the expired holder's write lands after the new holder's"},
	)
}

// KeyNames are the keys SKU-1..SKU-k; the lock of SKU-i is
// <root>/SKU-i, as in docs/background.md's /locks/inventory/SKU-1.
func KeyNames(k int) []string {
	keys := make([]string, max(k, 0)) // a negative count is validation's to report
	for i := range keys {
		keys[i] = fmt.Sprintf("SKU-%d", i+1)
	}
	return keys
}

// Prepare implements Workload: nothing to set up in the resource.
func (l *Lock) Prepare(context.Context, Resource) error { return nil }

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

func (l *Lock) think(ctx context.Context) { ctxsleep.Sleep(ctx, l.Think) }

// DefaultFaults implements Workload: a holder paused in its critical
// section past its session, the classic failure fencing exists for
// (docs/background.md#why-a-lock-needs-a-fence).
func (l *Lock) DefaultFaults() []string { return []string{"pause-holder"} }

// DefaultTiming implements Workload: the run's defaults, which were chosen for this workload's gate.
func (l *Lock) DefaultTiming() Timing { return Timing{} }
