package workloads

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	configcheck "github.com/zkchaos/zkchaos/checker/config"
	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

// ConfigName is the config workload's --workload value.
const ConfigName = "config"

// ConfigKey is the one config of the workload, the znode
// recipes.ConfigRoot/app.
const ConfigKey = "app"

// Config is the configuration-notification workload
// (docs/background.md#configuration-notification):
// the first Admins clients update recipes.ConfigRoot/ConfigKey by compare-and-set
// (read the version, setData with it as the expected version); every
// other client watches it, re-reads data and Stat on every notification,
// and reports each version it applied (an applied event, with the data's
// digest). Its checkers ask what a config client's user asks: did every
// client see only versions that were written, never going back, and end
// on the last one; and did the admins lose an update.
type Config struct {
	Admins         int
	Think          time.Duration
	SessionTimeout time.Duration

	next atomic.Int64 // the values the admins write, unique in the run

	mu sync.Mutex
	// watching is, per client index, the process that answered its watch:
	// a retired process's successor must watch again.
	watching map[int]int
}

func init() {
	register(&Config{}, func(s Settings) (Workload, error) {
		if s.Admins < 1 || s.Admins >= s.Workers {
			return nil, errAdmins(s)
		}
		return &Config{Admins: s.Admins, Think: s.Think, SessionTimeout: s.SessionTimeout, watching: map[int]int{}}, nil
	})
}

// Name implements Workload.
func (w *Config) Name() string { return ConfigName }

// InitialData is version 0 of the config, which the controller writes: the
// admins' data format (docs/worker-protocol.md, "Config").
var InitialData = history.ConfigData(0)

// Nodes are the config's parent and the config itself at version 0.
func (w *Config) Nodes() []Node {
	return []Node{{Path: recipes.ConfigRoot}, {Path: recipes.ConfigRoot + "/" + ConfigKey, Data: InitialData}}
}

// Prepare implements Workload: nothing to set up in the resource.
func (w *Config) Prepare(context.Context, Resource) error { return nil }

// Step is one update for an admin, and for a watcher a watch on a process
// that has none yet, else a short wait: what a watcher does between
// notifications the worker reports on its own (applied events).
func (w *Config) Step(ctx context.Context, c Client, _ *rand.Rand) {
	if c.Index() < w.Admins {
		w.update(ctx, c)
		ctxsleep.Sleep(ctx, w.Think)
		return
	}
	if !w.ensureWatching(ctx, c) {
		ctxsleep.Sleep(ctx, w.Think)
		return
	}
	ctxsleep.Sleep(ctx, 100*time.Millisecond)
}

// update reads the config and writes a new value based on the version
// read; it reports whether the update succeeded.
func (w *Config) update(ctx context.Context, c Client) bool {
	_, ok := w.updateTo(ctx, c)
	return ok
}

// updateTo is update, also returning the version it wrote as the
// client's answer gave it (nil when the answer gave none: the checkers
// then have no final version either).
func (w *Config) updateTo(ctx context.Context, c Client) (*int64, bool) {
	rd := c.Do(ctx, Op{F: history.FReadConfig, Key: ConfigKey})
	if rd.Type != history.OK || rd.Value == nil || rd.Value.Version == nil {
		return nil, false
	}
	v := w.next.Add(1)
	up := c.Do(ctx, Op{F: history.FUpdate, Key: ConfigKey, Value: &v, Expected: history.Int64(*rd.Value.Version)})
	if up.Type != history.OK {
		return nil, false
	}
	if up.Value != nil {
		return up.Value.Version, true
	}
	return nil, true
}

// ensureWatching sends a watch when the client's current process has not
// answered one; it reports whether the client is watching.
func (w *Config) ensureWatching(ctx context.Context, c Client) bool {
	p := c.Process()
	w.mu.Lock()
	got, ok := w.watching[c.Index()]
	w.mu.Unlock()
	if ok && got == p {
		return true
	}
	res := c.Do(ctx, Op{F: history.FWatch, Key: ConfigKey})
	if res.Type != history.OK {
		return false
	}
	w.mu.Lock()
	w.watching[c.Index()] = p
	w.mu.Unlock()
	return true
}

// ConvergenceBound is how long after the final version's write every live
// client must have applied it: two session timeouts (a client cut off
// when it was written learns of it after its session moves or expires)
// plus a second for the re-read.
func (w *Config) ConvergenceBound() time.Duration { return 2*w.SessionTimeout + time.Second }

// ConvergedSettle is how long the final phase goes on once every watcher
// reported the final version, so that a client that at once applies
// something else (an older version, other data) is still seen doing it;
// one that would do so later than this, and within the rest of
// ConvergenceBound, is no longer watched for.
const ConvergedSettle = time.Second

// Final makes sure every watcher watches on its current process, has the
// first admin write one final version (retrying a failed compare-and-set,
// as an operator would), and waits for the clients to apply it: until
// every watcher's current process reported it and ConvergedSettle more,
// or ConvergenceBound at most. Ending early changes no verdict
// (config-convergence needs exactly that of the processes alive at the
// end); a client slow to apply still makes the run wait the whole bound.
func (w *Config) Final(ctx context.Context, e End) {
	cs := e.Clients()
	watchers := cs[w.Admins:]
	for _, c := range watchers {
		w.ensureWatching(ctx, c)
	}
	var final *int64
	for ok := false; ctx.Err() == nil && !ok; {
		if final, ok = w.updateTo(ctx, cs[0]); !ok {
			ctxsleep.Sleep(ctx, 100*time.Millisecond)
		}
	}
	deadline := time.Now().Add(w.ConvergenceBound())
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if final != nil && converged(e, watchers, *final) {
			ctxsleep.Sleep(ctx, min(ConvergedSettle, time.Until(deadline)))
			return
		}
		ctxsleep.Sleep(ctx, 50*time.Millisecond)
	}
}

// converged says whether every one of cs reported applying version v of
// the config key, or a later one.
func converged(e End, cs []Client, v int64) bool {
	for _, c := range cs {
		if got, ok := e.Applied(c, ConfigKey); !ok || got < v {
			return false
		}
	}
	return true
}

// Checkers are integrity and the config checkers.
func (w *Config) Checkers() []checker.Checker {
	return append([]checker.Checker{{Name: integrity.Name, Check: integrity.Check, Always: true}}, configcheck.All()...)
}

// DefaultGate is every config checker: each answers a question the user
// of a config client has.
func (w *Config) DefaultGate() []string { return append([]string(nil), configcheck.DefaultGate...) }

// DefaultFaults implements Workload: a client paused past its session misses notifications it must catch up on.
func (w *Config) DefaultFaults() []string { return []string{"pause-worker"} }

// DefaultTiming implements Workload: the timing this workload was calibrated with (calibrated).
func (w *Config) DefaultTiming() Timing { return calibrated }

// ConfigFaults are the faults a config client is tested under: a client
// paused past its session or expired (it must resync), and ZooKeeper's
// (it must reconnect and hear of every version). A correct client stays
// valid under each.
var ConfigFaults = []string{"pause-worker", "expire-holder", "pause-zk-leader", "kill-zk", "partition-zk-leader"}

// configGateArgs: two admins, so that compare-and-set is contended and
// config-cas has something to judge.
var configGateArgs = []string{"--admins", "2"}

// GateCells are the standard cells of a correct config client, each with
// two admins, valid on every config checker: the baseline, and each fault
// of ConfigFaults. The quick set is the baseline and pause-worker.
//
// There is no unfenced cell: the config's data is ZooKeeper's own node,
// not the register, so the workload has no fence to take away. What
// shows that the harness sees the client's effects instead is
// config-convergence, judged in every cell: it needs every live watcher
// to report (its watch answer or an applied event) the final version,
// which the subject's own admin writes after the last heal and which
// reaches the watchers only through their watches; a subject whose
// updates or watches do nothing has no final version (unknown) or a
// watcher that never applies it (invalid). config-consistent holds each
// reported version to the digest of the data an admin wrote for it.
func (w *Config) GateCells() []GateCell {
	valid := func() map[string]checker.Validity { return validOn(configcheck.DefaultGate...) }
	cells := []GateCell{{Nemesis: []string{"none"}, Fenced: true, Quick: true, Args: configGateArgs, Expect: valid(),
		Why: "baseline: two admins, no faults: every watcher applies only versions the admins wrote, in order, and ends on the last"}}
	for _, f := range ConfigFaults {
		cells = append(cells, GateCell{Nemesis: []string{f}, Fenced: true, Quick: f == "pause-worker", Args: configGateArgs, Expect: valid(),
			Why: "a correct config client stays consistent and converges under " + f})
	}
	return cells
}

// Traits: ZooKeeper and the register only; its znodes are at fixed paths.
func (w *Config) Traits() Traits { return Traits{} }
