package workloads

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/election"
	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// ElectionName is the election workload's --workload value.
const ElectionName = "election"

// Service is the one service the candidates run for: its candidates
// are children of recipes.ElectionRoot/billing.
const Service = "billing"

// Election is the leader-election workload (docs/background.md#leader-election
// and docs/background.md#exactly-once-effects):
// every client is a candidate for Service; the one that wins (campaign
// ok, with its term) scans the task table (a new leader scans what really happened
// before taking over), runs a batch of the
// tasks it has not seen done (claim, then complete after the task's work,
// both under its term), and resigns, so leadership moves on. What the
// user's data saw is judged by exactly-once (every task executed once)
// and stale-term (no write of an old term accepted after a newer one);
// leader-overlap and term-order judge the election itself.
//
// The table starts with Chunk tasks and grows by Chunk more whenever
// fewer than half a chunk of it is left not known done (growIfLow), up
// to MaxTableTasks, so it does not run out in a run's time, and the final
// phase completes only what is left of it, never more than one and a
// half chunks: tasks nobody touched prove nothing. Leaders pick among
// those tasks only, so a small chunk makes successors finish a deposed
// leader's task before it resumes, and idempotency then hides its stale
// call: the runner's default chunk says how large is large enough.
type Election struct {
	// Chunk is how many tasks the table starts with and grows by.
	Chunk          int
	Batch          int
	Hold           time.Duration
	Think          time.Duration
	AcquireTimeout time.Duration

	// growMu lets one client at a time grow the table; res is Prepare's
	// resource, which the growth goes through, size the table's tasks
	// (t1..t<size>), and unsure says that the last growth failed, so the
	// register may hold the next chunk already: all three under growMu.
	growMu sync.Mutex
	res    Resource
	size   int
	unsure bool

	mu sync.Mutex
	// live are the table's tasks not known done, in table order, the
	// ones leaders pick from: a task leaves it when some leader
	// completed it (ok); an unknown outcome leaves it to be done again.
	live []string
}

func init() {
	register(&Election{}, func(s Settings) (Workload, error) {
		if s.Tasks < 1 {
			return nil, fmt.Errorf("%s %d: must be at least 1", setting.Name("Tasks"), s.Tasks)
		}
		if s.Tasks > MaxTableTasks {
			return nil, fmt.Errorf("%s %d: must be at most %d (a leader's scan of a larger table does not fit in the register's reply)",
				setting.Name("Tasks"), s.Tasks, MaxTableTasks)
		}
		return &Election{Chunk: s.Tasks, Batch: 5, Hold: s.Hold, Think: s.Think,
			AcquireTimeout: s.AcquireTimeout, size: s.Tasks, live: TaskNames(s.Tasks)}, nil
	})
}

// TaskNames are the task keys billing:2026-11-30:t1..tn (idempotency
// keys from business identity, a task of a tenant on a day:
// docs/background.md#exactly-once-effects).
func TaskNames(n int) []string { return taskNames(1, n) }

// taskNames are the n task keys from t<first> on.
func taskNames(first, n int) []string {
	out := make([]string, max(n, 0))
	for i := range out {
		out[i] = taskName(first + i)
	}
	return out
}

// taskName is the key of task t<i>.
func taskName(i int) string { return fmt.Sprintf("%s:2026-11-30:t%d", Service, i) }

// Name implements Workload.
func (e *Election) Name() string { return ElectionName }

// Nodes are the election root and the service's node, whose children are
// the candidates' ephemeral sequential nodes.
func (e *Election) Nodes() []Node {
	return []Node{{Path: recipes.ElectionRoot}, {Path: recipes.ElectionRoot + "/" + Service}}
}

// Prepare creates the task table's first chunk, every task PENDING,
// takes the table as the register has it, and keeps r to grow it while
// the run goes on.
func (e *Election) Prepare(ctx context.Context, r Resource) error {
	e.growMu.Lock()
	defer e.growMu.Unlock()
	e.res = r
	if err := r.InitTasks(ctx, Service, TaskNames(e.Chunk)); err != nil {
		return err
	}
	table, err := r.Tasks(ctx, Service)
	if err != nil {
		return err
	}
	e.adopt(table)
	return nil
}

// adopt takes the register's table: the first chunk in a new run, but
// in a resumed soak also the tasks its earlier segments added (t1 on
// without a gap), which this segment must finish too, less those done
// already, which it must not run again. The caller holds growMu.
func (e *Election) adopt(table map[string]bool) {
	size := e.Chunk
	for {
		if _, ok := table[taskName(size+1)]; !ok {
			break
		}
		size++
	}
	var live []string
	for _, t := range TaskNames(size) {
		if !table[t] {
			live = append(live, t)
		}
	}
	e.size = size
	e.mu.Lock()
	defer e.mu.Unlock()
	e.live = live
}

// MaxTableTasks is where the table stops growing: a leader's scan lists
// every task of the table, about 130 bytes each, and the register's
// client reads at most 1 MiB of a reply, so a table of about 8000 tasks
// would fail every scan (and retire every leader). 4000 keeps a scan
// under half of that, and lasts the gate's cells many times over (about
// ten tasks a second at the default --hold of 100 ms) and a soak about
// seven minutes, after which its leaders find nothing left, as with a
// table that does not grow.
const MaxTableTasks = 4000

// growIfLow adds the next chunk when fewer than half a chunk of the
// table is left not known done. Half a chunk (500 tasks at the default
// --tasks) is more than the leaders of the moment can take
// while the growth, one call to the resource, is under way, and a chunk
// at a time keeps those calls rare. A client that finds another growing
// goes on with the table as it is. A failed growth keeps the table as it
// was (the resource logs why), and a later Step tries again.
func (e *Election) growIfLow(ctx context.Context) {
	if ctx.Err() != nil || !e.low() || !e.growMu.TryLock() {
		return
	}
	defer e.growMu.Unlock()
	if e.res != nil && e.low() && e.size+e.Chunk <= MaxTableTasks {
		_ = e.extend(ctx)
	}
}

// low reports whether fewer than half a chunk of the table is left.
func (e *Election) low() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return 2*len(e.live) < e.Chunk
}

// extend adds the next chunk: to the register first, then to the tasks
// leaders pick from, so that no leader claims a task the register does
// not know. On an error the table stays as it was and unsure is set: the
// init may have been committed all the same. The caller holds growMu.
func (e *Election) extend(ctx context.Context) error {
	tasks := taskNames(e.size+1, e.Chunk)
	if err := e.res.InitTasks(ctx, Service, tasks); err != nil {
		e.unsure = true
		return fmt.Errorf("add tasks t%d..t%d to the table: %w", e.size+1, e.size+e.Chunk, err)
	}
	e.size += e.Chunk
	e.unsure = false
	e.mu.Lock()
	defer e.mu.Unlock()
	e.live = append(e.live, tasks...)
	return nil
}

// settle adds the chunk a failed growth may have left in the register
// without the workload knowing: an init entry names its tasks, so unless
// the final phase runs them exactly-once calls them missing.
func (e *Election) settle(ctx context.Context) {
	e.growMu.Lock()
	defer e.growMu.Unlock()
	if e.unsure && e.res != nil {
		_ = e.extend(ctx)
	}
}

// Step grows the table if it runs low, then campaigns; a winner runs one
// batch and resigns.
func (e *Election) Step(ctx context.Context, c Client, r *rand.Rand) {
	defer c.SetPhase(Idle, "", 0)
	e.growIfLow(ctx)
	camp := c.Do(ctx, Op{F: history.FCampaign, Key: Service, Timeout: e.AcquireTimeout})
	if camp.Type != history.OK {
		ctxsleep.Sleep(ctx, e.Think)
		return
	}
	term := int64(0)
	if camp.Value != nil && camp.Value.Token != nil {
		term = *camp.Value.Token
	}
	c.SetPhase(Holding, Service, term)
	if !e.lead(ctx, c, term, e.pick(r, e.Batch), e.Hold) {
		return // retired: its successor campaigns afresh
	}
	if rs := c.Do(ctx, Op{F: history.FResign, Key: Service}); rs.Type == history.Info {
		return
	}
	c.SetPhase(Idle, "", 0)
	ctxsleep.Sleep(ctx, e.Think)
}

// lead is a leader's work: scan, then claim and complete each task; it
// returns false when an info completion retired the process.
func (e *Election) lead(ctx context.Context, c Client, term int64, tasks []string, work time.Duration) bool {
	if sc := c.Do(ctx, Op{F: history.FScan, Key: Service}); sc.Type == history.Info {
		return false
	} else if sc.Type != history.OK {
		return true // not leading any more
	}
	for _, t := range tasks {
		cl := c.Do(ctx, Op{F: history.FClaim, Key: t})
		if cl.Type == history.Info {
			return false
		}
		if cl.Type != history.OK {
			return true // fenced off, or not leading: the batch is over
		}
		c.SetPhase(Critical, Service, term)
		co := c.Do(ctx, Op{F: history.FComplete, Key: t, Work: work})
		if co.Type == history.Info {
			return false
		}
		c.SetPhase(Holding, Service, term)
		if co.Type == history.OK {
			e.done(t)
		}
	}
	return true
}

// done takes a task some leader completed out of the live table.
func (e *Election) done(t string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if i := slices.Index(e.live, t); i >= 0 {
		e.live = slices.Delete(e.live, i, i+1)
	}
}

// pick chooses up to n tasks of the live table, in table order from a
// random start (the first with r nil), so leaders spread over it.
func (e *Election) pick(r *rand.Rand, n int) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	n = min(n, len(e.live))
	if n <= 0 {
		return nil
	}
	start := 0
	if r != nil {
		start = r.IntN(len(e.live))
	}
	out := make([]string, n)
	for i := range out {
		out[i] = e.live[(start+i)%len(e.live)]
	}
	return out
}

// Final has the first client win an election and run every task of the
// live table, without the work time, so that exactly-once judges a table
// that was meant to be finished: a task missing after this was lost.
func (e *Election) Final(ctx context.Context, end End) {
	e.settle(ctx)
	cs := end.Clients()
	for _, c := range cs {
		for ctx.Err() == nil {
			camp := c.Do(ctx, Op{F: history.FCampaign, Key: Service, Timeout: e.AcquireTimeout})
			if camp.Type == history.Info {
				continue // retired: its successor campaigns
			}
			if camp.Type != history.OK {
				break
			}
			term := int64(0)
			if camp.Value != nil && camp.Value.Token != nil {
				term = *camp.Value.Token
			}
			if e.lead(ctx, c, term, e.pick(nil, math.MaxInt), 0) {
				c.Do(ctx, Op{F: history.FResign, Key: Service})
			}
			if len(e.pick(nil, 1)) == 0 {
				return
			}
		}
	}
}

// Checkers are integrity, the election's, and the lock's herd measure on
// the campaigns (a campaign is a queue entry like an acquire, and the
// zoo's herd recipe is also a candidate).
func (e *Election) Checkers() []checker.Checker {
	cs := append([]checker.Checker{{Name: integrity.Name, Check: integrity.Check, Always: true}}, election.All()...)
	return append(cs, checker.Checker{Name: lock.NameHerd, Check: lock.HerdOf(history.FCampaign, history.FResign)})
}

// DefaultGate is what the user's data saw: exactly-once and stale-term.
func (e *Election) DefaultGate() []string { return slices.Clone(election.DefaultGate) }

// DefaultFaults implements Workload: the application leader paused past its session: a deposed leader that acts.
func (e *Election) DefaultFaults() []string { return []string{"pause-app-leader"} }

// DefaultTiming implements Workload: the timing this workload was calibrated with (calibrated).
func (e *Election) DefaultTiming() Timing { return calibrated }

// ElectionFaults are the faults an election is tested under: those aimed
// at the application leader (its own, nemesis/apps.go), a lost reply of
// the resource, and ZooKeeper's. A correct candidate, fenced and
// idempotent, stays valid under each.
var ElectionFaults = []string{"pause-app-leader", "expire-app-leader", "isolate-app-leader", "lost-reply", "pause-zk-leader", "kill-zk"}

// electionLeaderFaults are the faults aimed at the application leader:
// their harm depends on where in its batch the leader is when they land.
var electionLeaderFaults = []string{"pause-app-leader", "expire-app-leader", "isolate-app-leader"}

// electionHeld are the leader faults that last (--pause): below the 3 s
// session (calibrated) the leader keeps its session and its term, above
// it the leader is deposed while it cannot know.
var electionHeld = map[string]bool{"pause-app-leader": true, "isolate-app-leader": true}

// electionGateValid are the checkers a correct candidate can never fail,
// fenced: every task once, no stale term accepted, one leader at a time
// unless a session loss explains it, one leader per term and terms
// growing, no task call after the leader knew it was deposed. Herd is
// reported, never judged (a worker need not report wake-ups), and
// election-stats only measures.
func electionGateValid() map[string]checker.Validity {
	return validOn(election.NameExactlyOnce, election.NameStaleTerm, election.NameLeaderOverlap,
		election.NameTermOrder, election.NameDemotedWork)
}

// validOn expects each named checker valid.
func validOn(names ...string) map[string]checker.Validity {
	m := map[string]checker.Validity{}
	for _, n := range names {
		m[n] = checker.Valid
	}
	return m
}

// GateCells are the standard cells of a correct election candidate: the
// baseline; fenced, each fault of ElectionFaults, the held ones at a pause
// below and above the session timeout; each leader fault with long tasks
// early and late in the first leader's batch; and unfenced, a paused
// leader's stale-term write accepted, which proves the harness sees the
// client's task calls (a subject whose calls never reach the register
// would pass every fenced cell). The quick set is the baseline and the
// unfenced cell.
func (e *Election) GateCells() []GateCell {
	cells := []GateCell{{Nemesis: []string{"none"}, Fenced: true, Quick: true, Expect: electionGateValid(),
		Why: "baseline: no faults, nothing to find"}}
	for _, f := range ElectionFaults {
		if !electionHeld[f] {
			cells = append(cells, electionCell(f, "", nil, "a correct candidate, fenced, runs every task once under "+f))
			continue
		}
		cells = append(cells,
			electionCell(f, "pause-1s", []string{"--pause", "1s"},
				f+" for 1 s, below the 3 s session: the leader keeps its session and its term, and must carry on without a false demotion or a second leader"),
			electionCell(f, "pause-5s", []string{"--pause", "5s"},
				f+" for 5 s, past the 3 s session: the leader is deposed while it cannot know, and fencing refuses what it sends after"))
	}
	cells = append(cells, electionBatchCells()...)
	return append(cells, GateCell{Nemesis: []string{"pause-app-leader"}, Quick: true,
		Expect: map[string]checker.Validity{election.NameStaleTerm: checker.Invalid},
		Why:    "without fencing the paused leader's call of an old term is accepted: the harness sees the client's task calls"})
}

// electionBatchCells aim each leader fault early and late in a leader's
// batch. No run flag places a fault at a given task, so the cells use
// what does: tasks of 1 s (--hold, the work of each complete) stretch the
// first leader's batch of five over about 5 s from the workload's start,
// and the first fault (--first-fault) lands in its first task (0 s) or
// late in it (3.5 s: a pause takes the fourth task's work; an expiry or
// an isolation, which wait for a task's work that has just begun, the
// fifth's). The faults after the first land wherever the schedule meets
// the leaders.
func electionBatchCells() []GateCell {
	var cells []GateCell
	for _, f := range electionLeaderFaults {
		cells = append(cells,
			electionCell(f, "batch-start", []string{"--hold", "1s", "--first-fault", "0s"},
				"tasks of 1 s, the first "+f+" in the first leader's first task ("+setting.Name("FirstFault")+" 0s; later ones land anywhere): nothing of the batch done yet"),
			electionCell(f, "batch-end", []string{"--hold", "1s", "--first-fault", "3500ms"},
				"tasks of 1 s, the first "+f+" late in the first leader's batch of five ("+setting.Name("FirstFault")+" 3.5s; later ones land anywhere): most of it done"))
	}
	return cells
}

// electionCell is a fenced cell of fault f with the given flags.
func electionCell(f, variant string, args []string, why string) GateCell {
	return GateCell{Nemesis: []string{f}, Fenced: true, Variant: variant, Args: args,
		Expect: electionGateValid(), Why: why}
}

// Traits: ZooKeeper and the register only; its znodes are at fixed paths.
func (e *Election) Traits() Traits { return Traits{} }
