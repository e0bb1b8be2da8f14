package matrix

import (
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/linear"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/workloads"
)

// short is the run length of a lock cell: long enough for several faults
// of each kind, short enough that the matrix stays usable. A fault cycle
// is the first fault at once (runner.Defaults' --first-fault 0), a pause
// of twice the 1 s session timeout, 2 s quiet between faults: about four
// faults in 15 s, as many as 30 s held with the 3 s session timeout of
// before (first fault at 2 s, 6 s pauses).
var short = []string{"--time-limit", "15s", "--nemesis-interval", "2s"}

// long is the run length of the cells whose workload keeps the timing it
// was calibrated with (workloads.Workload's DefaultTiming: the config and
// election workloads' 3 s session, first fault at 2 s) and of the gate's
// cells: 30 s.
var long = []string{"--time-limit", "30s", "--nemesis-interval", "2s"}

func with(extra ...string) []string { return append(slices.Clone(short), extra...) }

func withLong(extra ...string) []string { return append(slices.Clone(long), extra...) }

func expect(v checker.Validity, names ...string) map[string]checker.Validity {
	m := map[string]checker.Validity{}
	for _, n := range names {
		m[n] = v
	}
	return m
}

func valid(names ...string) map[string]checker.Validity { return expect(checker.Valid, names...) }

func invalid(names ...string) map[string]checker.Validity {
	return expect(checker.Invalid, names...)
}

// resource is the default gate: the checkers that answer "was my data
// corrupted?", and wrong-token, which a correct recipe never trips
// (every fenced cell of a correct subject shows that, fault by fault).
var resource = []string{fence.NameDoubleWriter, linear.NameRegister, fence.NameWrongToken}

// faults are every fault a lock is tested under, each a row for the seed
// recipe with fencing, which must stay valid under all of them.
var faults = workloads.LockFaults

// Default is the matrix `chaos test-all` runs: the seed recipe with fencing
// is valid under every fault; without fencing it is caught under holder
// pauses and session expiry; each known-buggy recipe is caught by the
// checker that names its bug under the fault that exposes it (docs/zoo.md
// explains each row), while seed under the same settings is not; and the
// other subjects (Curator, zk-lock, an exec: worker) run the seed recipe's
// rows, kazoo (Python) the client faults' (kazoo.go). exe is the chaos
// binary: the exec: subject is the built-in worker beside it, started as a
// team's own client would be.
func Default(exe string) []Cell {
	cells := []Cell{
		{Recipe: "seed", Nemesis: []string{"none"}, Fencing: "on", Args: short,
			Expect: valid(resource...), Why: "baseline: no faults, nothing to find"},
	}
	for _, f := range faults {
		cells = append(cells, Cell{Recipe: "seed", Nemesis: []string{f}, Fencing: "on", Args: short,
			Expect: valid(resource...), Smoke: f == "pause-holder",
			Why: "fencing keeps the data safe under " + f})
	}
	cells = append(cells,
		Cell{Recipe: "seed", Nemesis: []string{"pause-holder"}, Fencing: "off", Args: short, Smoke: true,
			Expect: invalid(fence.NameDoubleWriter), Why: "without fencing the paused holder's stale write lands"},
		Cell{Recipe: "seed", Nemesis: []string{"expire-holder"}, Fencing: "off", Args: short,
			Expect: invalid(fence.NameDoubleWriter), Why: "without fencing the expired holder's write lands after the new holder's"},
		Cell{Recipe: "seed", Variant: "acl-off", Nemesis: []string{"rogue-client"}, Fencing: "on",
			Args:   with("--acl", "off", "--keys", "1", "--hold", "300ms", "--pause", "1s"),
			Expect: invalid(lock.NameGrantOverlap), Why: "without the ACL an anonymous client forges the holder's node: two holders"},
	)
	// The zoo: each recipe carries one classic mistake (docs/zoo.md).
	contention := with("--keys", "1", "--acquire-timeout", "300ms")
	cells = append(cells,
		Cell{Recipe: "herd", Nemesis: []string{"none"}, Fencing: "on", Args: with("--keys", "1"),
			Expect: invalid(lock.NameHerd), Why: "every waiter watches the smallest node: wake-ups per hand-off grow with the waiters"},
		Cell{Recipe: "assume-on-watch", Nemesis: []string{"none"}, Fencing: "on", Smoke: true, Args: contention,
			Expect: invalid(lock.NameGrantOverlap), Why: "a fired watch taken as the grant gives two holders"},
		Cell{Recipe: "get-not-exists", Nemesis: []string{"none"}, Fencing: "on", Smoke: true, Args: with("--hold", "0s"),
			Expect: invalid(lock.NameLiveness), Why: "a predecessor gone before the watch: waits forever"},
		Cell{Recipe: "no-delete-on-timeout", Nemesis: []string{"none"}, Fencing: "on", Args: contention,
			Expect: invalid(lock.NameLiveness), Why: "a timed-out waiter's node blocks the queue"},
		Cell{Recipe: "ignore-session", Nemesis: []string{"pause-holder"}, Fencing: "on",
			Args:   with("--session-timeout", "1s", "--pause", "2s", "--op-timeout", "5s"),
			Expect: invalid(lock.NameGrantOverlap), Why: "carries on after its session expired: two holders"},
		// The expired holder must still be live when it releases: a
		// retired worker closes its session at exit instead of releasing,
		// so the pause stays shorter than --op-timeout (as for
		// ignore-session).
		Cell{Recipe: "release-smallest", Nemesis: []string{"pause-holder"}, Fencing: "on",
			Args:   with("--session-timeout", "1s", "--pause", "2s", "--op-timeout", "5s"),
			Expect: invalid(lock.NameGrantOverlap), Why: "the expired holder's release deletes the next holder's node"},
		Cell{Recipe: "random-token", Nemesis: []string{"none"}, Fencing: "on", Args: short, Smoke: true,
			Expect: invalid(lock.NameTokenOrder), Why: "a random token does not order grants"},
		Cell{Recipe: "clock-token", Nemesis: []string{"none"}, Fencing: "on", Args: short,
			Expect: invalid(lock.NameTokenOrder), Why: "grants within one clock second tie"},
	)
	// The seed recipe under the zoo's settings: the same checkers must stay
	// quiet.
	cells = append(cells,
		Cell{Recipe: "seed", Variant: "zoo-control", Nemesis: []string{"none"}, Fencing: "on", Args: contention,
			Expect: valid(lock.NameGrantOverlap, lock.NameLiveness, lock.NameHerd, lock.NameTokenOrder, fence.NameWrongToken),
			Why:    "control for the zoo's contention rows"},
		Cell{Recipe: "seed", Variant: "short-session", Nemesis: []string{"pause-holder"}, Fencing: "on",
			Args:   with("--session-timeout", "1s", "--pause", "2s", "--op-timeout", "5s"),
			Expect: valid(lock.NameGrantOverlap, fence.NameDoubleWriter, fence.NameWrongToken),
			Why:    "control for ignore-session's settings"},
	)
	// Other subjects run the seed recipe's rows.
	others := []struct{ recipe, label string }{
		{"curator", ""}, {"zk-lock", ""}, {"exec:" + subjects.WorkerPath(exe) + " --recipe seed", "exec-chaos-worker"}}
	for _, sj := range others {
		subj, label := sj.recipe, sj.label
		cells = append(cells,
			Cell{Recipe: subj, Label: label, Nemesis: []string{"pause-holder"}, Fencing: "on", Args: short,
				Smoke: subj == "curator", Expect: valid(resource...), Why: "fencing keeps the data safe"},
			Cell{Recipe: subj, Label: label, Nemesis: []string{"pause-holder"}, Fencing: "off", Args: short,
				Expect: invalid(fence.NameDoubleWriter), Why: "without fencing the paused holder's stale write lands"},
		)
	}
	cells = append(cells, serviceCells()...)
	cells = append(cells, postgresCells()...)
	cells = append(cells, kazooCells()...)
	cells = append(cells, configCells()...)
	cells = append(cells, electionCells()...)
	return append(cells, dockerCells()...)
}

// serviceCells are the other lock services' rows (--service): each of
// their subjects fenced valid under the client faults and under its own
// service's server faults, and unfenced caught under pause-holder. The
// pause outlasts the lease: on Redis the TTL is the session timeout (1 s,
// paused 2 s); etcd's lease cannot be shorter than 2 s with its 1 s
// election timeout, so its cells run with a 2 s session timeout (paused
// 4 s), and its unfenced cell runs 30 s: 15 s hold three pauses, and a
// pause that lands just after the holder's write shows nothing (1 run in
// 2 missed the double write). Smoke cells: redis-lock unfenced, etcd-mutex
// fenced (15 s each).
func serviceCells() []Cell {
	redis := []string{"pause-redis", "kill-redis", "partition-redis"}
	etcd := []string{"pause-etcd-leader", "kill-etcd", "partition-etcd-leader", "expire-holder"}
	subjects := []struct {
		recipe, service string
		faults          []string
		args, unfenced  []string
		smoke           string // the fencing of its smoke cell, "" for none
	}{
		{"redis-lock", "redis", redis, short, short, "off"},
		{"redlock", "redis", redis, short, short, ""},
		{"etcd-mutex", "etcd", etcd, with("--session-timeout", "2s"), withLong("--session-timeout", "2s"), "on"},
	}
	var cells []Cell
	for _, sj := range subjects {
		for _, f := range append([]string{"pause-holder", "pause-worker", "isolate-holder"}, sj.faults...) {
			cells = append(cells, Cell{Recipe: sj.recipe, Service: sj.service, Nemesis: []string{f}, Fencing: "on", Args: sj.args,
				Smoke: sj.smoke == "on" && f == "pause-holder", Expect: valid(resource...), Why: sj.service + ": fencing keeps the data safe under " + f})
		}
		cells = append(cells, Cell{Recipe: sj.recipe, Service: sj.service, Nemesis: []string{"pause-holder"}, Fencing: "off",
			Args: sj.unfenced, Smoke: sj.smoke == "off", Expect: caughtWholeRun(),
			Why: sj.service + ": the paused holder's lease runs out, another is granted, and its stale write lands without fencing"})
	}
	// ZooKeeper's row of the comparison (README, "ZooKeeper vs Redis vs
	// etcd"): the seed recipe's unfenced cell, run its whole time as these
	// are.
	return append(cells, Cell{Recipe: "seed", Variant: "compare", Nemesis: []string{"pause-holder"}, Fencing: "off", Args: short,
		Expect: caughtWholeRun(), Why: "zookeeper: the comparison's row, the whole run (double writes per minute)"})
}

// caughtWholeRun expects the double write and lets the run go its whole
// time (stats is judged too, and has no online check, so the cell does
// not stop at the first violation): the comparison counts the double
// writes per minute and the acquisitions per second of whole runs.
func caughtWholeRun() map[string]checker.Validity {
	e := invalid(fence.NameDoubleWriter)
	e[stats.Name] = checker.Valid
	return e
}

// postgresCells are the seed recipe's rows with PostgreSQL as the fenced
// resource (--resource postgres): the textbook conditional UPDATE
// (docs/background.md#why-a-lock-needs-a-fence) keeps the data safe (strict
// is its clause as written, on lets a grant write again), and without the
// token condition the paused holder's stale write is found in the audit
// table. The unfenced one is the smoke cell: it needs the whole path
// (server, workers' transactions, the export, the checker) to be caught,
// and stops at its first violation.
func postgresCells() []Cell {
	pg := with("--resource", "postgres")
	return []Cell{
		{Recipe: "seed", Variant: "postgres", Nemesis: []string{"pause-holder"}, Fencing: "on", Args: pg,
			Expect: valid(resource...), Why: "PostgreSQL's conditional UPDATE keeps the data safe"},
		{Recipe: "seed", Variant: "postgres", Nemesis: []string{"pause-holder"}, Fencing: "strict", Args: pg,
			Expect: valid(resource...), Why: "the textbook clause as written (fencing_token < :token) keeps the data safe"},
		{Recipe: "seed", Variant: "postgres", Nemesis: []string{"pause-holder"}, Fencing: "off", Args: pg, Smoke: true,
			Expect: invalid(fence.NameDoubleWriter), Why: "without the token condition the paused holder's stale write is in the audit table"},
	}
}

// configCells are the config workload's rows
// (docs/background.md#configuration-notification): the correct
// client valid under client and server faults, with one admin and with
// two competing; each config zoo bug caught by the checker that names it.
func configCells() []Cell {
	cfg := func(c Cell) Cell {
		c.Workload, c.Fencing = "config", "on"
		if c.Recipe == "" {
			c.Recipe = "seed"
		}
		return c
	}
	gate := []string{"config-consistent", "config-monotonic", "config-convergence", "config-cas"}
	var cells []Cell
	for _, f := range workloads.ConfigFaults {
		cells = append(cells, cfg(Cell{Nemesis: []string{f}, Args: withLong("--admins", "2"), Expect: valid(gate...),
			Smoke: f == "pause-worker", Why: "a correct config client stays consistent and converges under " + f}))
	}
	return append(cells,
		cfg(Cell{Recipe: "stale-apply", Nemesis: []string{"none"}, Args: withLong("--time-limit", "15s"),
			Expect: invalid("config-consistent"), Why: "applying the data read when the watch was set: a version with another version's data"}),
		cfg(Cell{Recipe: "no-rewatch", Nemesis: []string{"none"}, Args: withLong("--time-limit", "15s"),
			Expect: invalid("config-convergence"), Why: "a watch not set again: the client never sees the final version"}),
		cfg(Cell{Recipe: "blind-cas", Nemesis: []string{"none"}, Args: withLong("--time-limit", "15s", "--admins", "2"),
			Expect: invalid("config-cas"), Why: "setData without the version read: two admins lose an update"}),
	)
}

// dockerCells run the seed recipe's fault rows on the docker backend: the
// same faults, the same verdicts as local (fenced valid under each,
// unfenced caught), which is what makes the backend a backend and not a demo.
func dockerCells() []Cell {
	var cells []Cell
	for _, f := range faults {
		cells = append(cells, Cell{Recipe: "seed", Nemesis: []string{f}, Fencing: "on", Args: short, Cluster: "docker",
			Expect: valid(resource...), Smoke: f == "pause-holder",
			Why: "the docker backend: fencing keeps the data safe under " + f})
	}
	return append(cells, Cell{Recipe: "seed", Nemesis: []string{"pause-holder"}, Fencing: "off", Args: short, Cluster: "docker",
		Smoke: true, Expect: invalid(fence.NameDoubleWriter),
		Why: "the docker backend: without fencing the paused holder's stale write lands"})
}

// curator696 are the settings that expose CURATOR-696 under
// pause-zk-majority (docs/zoo.md): an outage of 8 s plus its onset, past
// Curator's own expiry of a suspended session (one session timeout, 3 s,
// after it noticed); campaigns that outwait it; leaderships of about 5 s,
// longer than the old session's fresh timeout.
var curator696 = []string{"--time-limit", "45s", "--pause", "8s", "--acquire-timeout", "30s", "--hold", "1s"}

// electionCells are the election workload's rows
// (docs/background.md#leader-election and
// docs/background.md#exactly-once-effects): fenced and idempotent, the seed
// recipe's leaders are valid under every fault aimed at the application
// leader, at the resource and at ZooKeeper; unfenced, a paused leader's
// stale-term write is accepted; without idempotency, a lost reply's retry
// runs a task twice.
func electionCells() []Cell {
	el := func(c Cell) Cell {
		c.Workload, c.Recipe = "election", "seed"
		c.Args = append(slices.Clone(long), c.Args...)
		return c
	}
	gate := []string{"exactly-once", "stale-term"}
	var cells []Cell
	for _, f := range workloads.ElectionFaults {
		cells = append(cells, el(Cell{Nemesis: []string{f}, Fencing: "on", Expect: valid(gate...),
			Smoke: f == "pause-app-leader", Why: "fenced, idempotent leaders run every task once under " + f}))
	}
	cells = append(cells,
		el(Cell{Nemesis: []string{"pause-app-leader"}, Fencing: "off", Expect: invalid("stale-term"),
			Why: "without fencing the paused leader's write of an old term is accepted"}),
		el(Cell{Nemesis: []string{"lost-reply"}, Fencing: "on", Variant: "idempotency-off", Args: []string{"--idempotency", "off"},
			Expect: invalid("exactly-once"), Why: "without idempotency the retry of a call whose reply was lost runs the task again"}))
	// Curator's election recipes as the candidate (the Java worker):
	// LeaderLatch (curator) and LeaderSelector (curator-selector).
	for _, cur := range []struct{ recipe, name string }{{"curator", "LeaderLatch"}, {"curator-selector", "LeaderSelector"}} {
		on := el(Cell{Nemesis: []string{"pause-app-leader"}, Fencing: "on", Expect: valid(gate...),
			Why: "Curator's " + cur.name + ", fenced and idempotent: every task once"})
		off := el(Cell{Nemesis: []string{"pause-app-leader"}, Fencing: "off", Expect: invalid("stale-term"),
			Why: "Curator's " + cur.name + " without fencing: a deposed leader's write of its old term lands"})
		on.Recipe, off.Recipe = cur.recipe, cur.recipe
		cells = append(cells, on, off)
	}
	// CURATOR-696 (fixed in Curator 5.7; Debian ships 5.4): after a quorum
	// loss longer than the session timeout, Curator has given up its session
	// and comes back with a new one while the old one lives a fresh timeout
	// under the newly elected leader; a waiting latch then leads with its old
	// node, which the old session's expiry deletes under it, and the next
	// candidate leads too. Candidates must outwait the outage
	// (--acquire-timeout) and a leader outlive the old session (--hold 1s:
	// five tasks of 1 s). The seed recipe checks its node's ephemeralOwner:
	// valid.
	// Its quorum losses come about 13 s apart and about one in three
	// shows the bug (first violation after the 1st, 3rd and 6th, three
	// runs, docs/measurements.md): the default limit's nine would miss
	// one run in 25, 5 minutes' twenty-odd about one in 3000.
	c696 := el(Cell{Nemesis: []string{"pause-zk-majority"}, Fencing: "on", Args: curator696, Expect: invalid("leader-overlap"),
		Limit: 5 * time.Minute,
		Why:   "CURATOR-696: Curator 5.4's LeaderLatch leads with its old session's node after a quorum loss; two leaders"})
	c696.Recipe = "curator"
	cells = append(cells, c696,
		el(Cell{Nemesis: []string{"pause-zk-majority"}, Fencing: "on", Args: curator696, Expect: valid(append([]string{"leader-overlap"}, gate...)...),
			Why: "the seed recipe's candidates check their node's owner: one leader at a time after a quorum loss"}))
	return append(cells, electionZooCells()...)
}

// electionZooCells are the election's zoo rows, each beside the seed
// recipe under the same settings: every mistake caught by the checker
// named for it, the seed recipe not.
func electionZooCells() []Cell {
	zoo := func(recipe string, c Cell) Cell {
		c.Workload, c.Recipe, c.Fencing = "election", recipe, "on"
		c.Args = append(slices.Clone(long), c.Args...)
		return c
	}
	quiet := []string{"term-order", "leader-overlap", "herd", "demoted-work", "exactly-once", "stale-term"}
	longWork := []string{"--hold", "1s"}
	return []Cell{
		zoo("seed", Cell{Nemesis: []string{"none"}, Expect: valid(quiet...), Why: "control for the zoo rows without faults"}),
		zoo("seed", Cell{Nemesis: []string{"expire-app-leader"}, Variant: "long-work", Args: longWork,
			Expect: valid("demoted-work", "exactly-once", "stale-term"), Why: "control for no-cancel and callback-done: work cancelled on demotion, and not reported done"}),
		// The lock zoo's token mistakes, as candidates: a term that does
		// not order leaders (a term must come from ZooKeeper, the node's czxid:
		// docs/background.md#leader-election).
		zoo("random-token", Cell{Nemesis: []string{"none"}, Expect: invalid("term-order"), Why: "a random term does not order the leaders"}),
		zoo("no-term", Cell{Nemesis: []string{"none"}, Expect: invalid("term-order"), Why: "without a term every leader presents the same zero"}),
		zoo("herd", Cell{Nemesis: []string{"none"}, Expect: invalid("herd"), Why: "every candidate watches the leader's node: each resign wakes them all"}),
		zoo("callback-done", Cell{Nemesis: []string{"expire-app-leader"}, Args: longWork, Expect: invalid("exactly-once"),
			Why: "a task whose work the demotion cancelled is reported done: it is never run"}),
		zoo("no-cancel", Cell{Nemesis: []string{"expire-app-leader"}, Args: longWork, Expect: invalid("demoted-work"), Smoke: true,
			Why: "the task's work goes on after the demotion and its call goes out"}),
		zoo("ignore-session", Cell{Nemesis: []string{"expire-app-leader"}, Args: longWork, Expect: invalid("demoted-work"),
			Why: "a leader that ignores its session's expiry keeps calling"}),
	}
}
