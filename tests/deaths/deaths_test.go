package deaths

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// cleanBound is how long a dead run's leftovers may take to go: the
// janitor's sweep after a controller's death, or the next run's start
// sweep after the janitor died too. Both take a second or two on a quiet
// machine; the bound leaves room for a loaded one (other test packages
// beside this one), since what a death proves is that nothing stays. On
// a slow machine with both cores busy through the suite, both took up
// to 31 s (a whole tree killed in its final phase, swept by the next
// run's start; a controller's janitor), so the bound is a minute.
const cleanBound = time.Minute

// TestDeaths is the death campaign (doc.go): per backend, runs killed at
// random moments in rotating ways, each checked to leave nothing and
// never to be valid.
//
// Its default (make test) takes about 40 s: six runs one after
// another, each its one-server setup (about 5 s) and up to its 2 s
// workload, teardown and check before its kill; a victim is settled
// while the next run starts, so only the last one's sweep adds to it.
func TestDeaths(t *testing.T) {
	s := settingsFromEnv(t)
	t.Logf("death campaign: %d deaths per backend on %v, first seed %d (replay: ZKCHAOS_DEATH_SEED=%d)", s.deaths, s.backends, s.seed, s.seed)
	for _, name := range s.backends {
		t.Run(name, func(t *testing.T) {
			chaostest.NeedEnsemble(t)
			b := backendFor(t, name, s)
			c := &campaign{t: t, s: s, b: b, results: t.TempDir(), chaos: chaostest.Binary(t)}
			// The failures come last, after the tables, where a log that
			// shows only its tail (CI's) still shows them; deferred, so
			// that a campaign cut short by a fatal error reports them too.
			defer c.report()
			c.run()
		})
	}
}

// campaign is one backend's deaths.
type campaign struct {
	t       *testing.T
	s       settings
	b       backend
	results string
	chaos   string
	mu      sync.Mutex
	deaths  []death
	missed  int // runs that ended before their kill came
	// failures are what failed the campaign, reported after its tables.
	failures []string
}

// victim is a run the campaign killed.
type victim struct {
	plan
	dir, runID string
	reached    string // the moment it was at when it died
	killedAt   time.Time
}

// death is a victim settled: what it left, how long that took to go,
// and what chaos check said of it.
type death struct {
	victim
	left []string
	took time.Duration
	code int
	out  string
}

// run kills s.deaths runs. Each victim is settled while the next run
// starts: a victim whose janitor died too is swept by that start, and
// the janitor of one whose did not sweeps meanwhile. The last victim
// gets one more short run of its own.
func (c *campaign) run() {
	var wg sync.WaitGroup
	var pending *victim
	// Each pass waits for its settling before the next, so the counts
	// are read alone; a run that ends before its kill is retried, up to
	// twice the deaths asked for.
	for i := uint64(0); i < uint64(2*c.s.deaths) && c.count(pending) < c.s.deaths; i++ {
		p := planOf(c.s.seed+i, c.b.faults)
		if pending != nil && c.b.apart > 0 {
			c.awaitApart(pending.runID)
		}
		cmd, se, started := c.start(p)
		if pending != nil {
			v := *pending
			wg.Go(func() { c.settle(v, started) })
		}
		pending = c.kill(p, cmd, se)
		wg.Wait()
	}
	if pending != nil {
		if c.b.apart > 0 {
			c.awaitApart(pending.runID)
		}
		args := append([]string{"run", "--results", c.results, "--name", "sweeper", "--seed", "1"}, c.s.profile()...)
		cmd, _, se := chaostest.Start(c.t, append(append(args, c.b.args...), "--nemesis", "none", "--time-limit", "1s")...)
		c.settle(*pending, time.Now())
		if code := chaostest.ExitOf(cmd.Wait()); code != 0 {
			c.fail("the last victim's sweeper run: exit %d, want 0\n%s", code, chaostest.Tail(se.String(), 2000))
		}
	}
}

// awaitApart waits until the backend's own leftovers of run runID are
// gone, at most apart; settle judges them.
func (c *campaign) awaitApart(runID string) {
	if runID == "" {
		return // died before it had one, so before it made anything
	}
	for deadline := time.Now().Add(c.b.apart); time.Now().Before(deadline) && len(c.b.left(runID)) > 0; {
		time.Sleep(100 * time.Millisecond)
	}
}

// count is how many deaths are settled or about to be (pending).
func (c *campaign) count(pending *victim) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.deaths)
	if pending != nil {
		n++
	}
	return n
}

// start starts death p's run in the background.
func (c *campaign) start(p plan) (*exec.Cmd, *bytes.Buffer, time.Time) {
	args := append([]string{"run", "--results", c.results, "--name", "death-" + strconv.FormatUint(p.seed, 10),
		"--seed", strconv.FormatUint(p.seed, 10), "--nemesis", p.fault}, c.s.profile()...)
	cmd, _, se := chaostest.Start(c.t, append(args, c.b.args...)...)
	return cmd, se, time.Now()
}

// kill waits for p's moment in the run, kills the run p's way and
// returns the victim, or nil when the run ended by itself first.
func (c *campaign) kill(p plan, cmd *exec.Cmd, se *bytes.Buffer) *victim {
	t := c.t
	dir, reached := c.aim(p, cmd)
	if dir == "" {
		c.missed++
		t.Logf("death %s: the run ended (or never made its folder) before its kill came; not counted\n%s", p, chaostest.Tail(se.String(), 1500))
		return nil
	}
	v := &victim{plan: p, dir: dir, runID: chaostest.RunID(dir), reached: reached}
	switch p.kind {
	case killController:
		chaostest.Crash(t, cmd)
	case killPair:
		chaostest.KillControllerAndJanitor(t, cmd, v.runID)
	case killTree:
		chaostest.KillWholeRun(t, cmd, v.runID)
	}
	v.killedAt = time.Now()
	// Read again now that the controller is dead and writes nothing
	// more: the moment seen before the kill may have ended in the
	// instant before it landed (a teardown done, its run complete).
	v.reached = chaostest.RunPhase(dir)
	return v
}

// aim waits until the run reaches p's moment (or has passed it), then
// p's delay, and returns its folder and the moment it is at. It returns
// "" when the run ends first.
func (c *campaign) aim(p plan, cmd *exec.Cmd) (dir, at string) {
	deadline := time.Now().Add(3 * time.Minute)
	for ; time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !proc.Alive(cmd.Process.Pid) {
			return "", ""
		}
		if dir == "" {
			dir = newest(c.results, p)
			continue
		}
		at = chaostest.RunPhase(dir)
		if at == p.target || order[at] > order[p.target] {
			break
		}
	}
	if p.delay > 0 {
		time.Sleep(p.delay)
	}
	if dir == "" || !proc.Alive(cmd.Process.Pid) {
		return "", ""
	}
	return dir, chaostest.RunPhase(dir)
}

// newest is the folder of p's run under results, "" until it exists.
func newest(results string, p plan) string {
	dir := chaostest.LatestRun(results)
	if dir == "" || !bytes.Contains([]byte(dir), []byte("/death-"+strconv.FormatUint(p.seed, 10)+"/")) {
		return ""
	}
	return dir
}

// settle waits until nothing of victim v is left (from its kill for a
// controller's death, which its janitor sweeps; from the next run's
// start otherwise), then runs chaos check on its folder.
func (c *campaign) settle(v victim, nextStart time.Time) {
	from := v.killedAt
	if v.kind != killController {
		from = nextStart
	}
	d := death{victim: v}
	if v.runID != "" {
		var more []func() []string
		if c.b.left != nil {
			more = append(more, func() []string { return c.b.left(v.runID) })
		}
		d.left, _ = chaostest.AwaitClean(v.runID, chaostest.RunSlot(v.dir), cleanBound, more...)
		d.took = time.Since(from)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.chaos, "check", v.dir).CombinedOutput()
	d.code, d.out = chaostest.ExitOf(err), string(out)
	c.mu.Lock()
	c.deaths = append(c.deaths, d)
	c.mu.Unlock()
	c.judge(d)
}

// judge logs a death and records a failure, naming it so that it can be
// replayed, when it left something or chaos check judged it otherwise
// than its moment says: killed before its check, incomplete and never
// valid; after, complete.
func (c *campaign) judge(d death) {
	t := c.t
	name := d.plan.String() + " backend=" + c.b.name + " phase=" + d.reached + " run=" + d.runID
	t.Logf("death %s: clean after %s, chaos check exit %d", name, d.took.Round(10*time.Millisecond), d.code)
	for _, l := range d.left {
		c.fail("death %s: left after %s: %s\n  replay: %s", name, cleanBound, l, c.s.rerun(d.plan, c.b.name))
	}
	complete := order[d.reached] >= order[chaostest.MomentCheck]
	if !slices.Contains(wantCodes(d.reached), d.code) || complete != strings.Contains(d.out, "\nrun: complete") {
		// Its verdict and completion lines, the head of what it said:
		// the failure stays a few lines, which a log's tail still shows.
		lines := strings.SplitN(strings.TrimSpace(d.out), "\n", 3)
		head := strings.Join(lines[:min(2, len(lines))], "\n  ")
		c.fail("death %s: chaos check %s exit %d, want one of %v, the run judged complete: %v\n  %s\n  replay: %s", name, d.dir, d.code,
			wantCodes(d.reached), complete, head, c.s.rerun(d.plan, c.b.name))
	}
}

// report logs the campaign's tables, then fails the test with each of
// its failures.
func (c *campaign) report() {
	c.table()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.failures {
		c.t.Error(f)
	}
}

// fail records a failure of the campaign, reported after its tables.
func (c *campaign) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// wantCodes are the exits chaos check may give a run that died at
// moment m: unknown, or invalid where the run recorded a violation
// before it died. A run killed once its history was closed and its
// teardown done (check, report) is complete: its check gives its own
// verdict, which may be unknown (a checker that could not decide), and
// judge requires it to say the run was complete.
func wantCodes(m string) []int {
	if order[m] >= order[chaostest.MomentCheck] {
		return []int{0, 1, 2}
	}
	return []int{2, 1}
}
