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
	rd := c.Do(ctx, Op{F: history.FReadConfig, Key: ConfigKey})
	if rd.Type != history.OK || rd.Value == nil || rd.Value.Version == nil {
		return false
	}
	v := w.next.Add(1)
	up := c.Do(ctx, Op{F: history.FUpdate, Key: ConfigKey, Value: &v, Expected: history.Int64(*rd.Value.Version)})
	return up.Type == history.OK
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

// Final makes sure every watcher watches on its current process, has the
// first admin write one final version (retrying a failed compare-and-set,
// as an operator would), and waits ConvergenceBound for the clients to
// apply it.
func (w *Config) Final(ctx context.Context, e End) {
	cs := e.Clients()
	for _, c := range cs[w.Admins:] {
		w.ensureWatching(ctx, c)
	}
	for ctx.Err() == nil && !w.update(ctx, cs[0]) {
		ctxsleep.Sleep(ctx, 100*time.Millisecond)
	}
	ctxsleep.Sleep(ctx, w.ConvergenceBound())
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

// GateCells are none yet: chaos gate runs lock clients (its --recipe is a
// lock subject), and a standard set for a config subject waits for a way to
// name one there.
func (w *Config) GateCells() []GateCell { return nil }

// Traits: ZooKeeper and the register only; its znodes are at fixed paths.
func (w *Config) Traits() Traits { return Traits{} }
