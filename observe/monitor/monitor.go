package monitor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/internal/jsonl"
)

// Config is what a monitor watches and where it writes.
type Config struct {
	// Nodes are the ensemble's servers, reached at their client
	// addresses from where the controller runs (on the run's bridge, or
	// 127.0.0.1), so a partition between servers does not cut the
	// monitor off any more than it cuts the controller.
	Nodes []cluster.Node
	// Dirs are the lock directories (workloads.Dirs).
	Dirs []string
	// Interval is the fixed sampling interval (> 0).
	Interval time.Duration
	// SessionTimeout is the monitor's own session's.
	SessionTimeout time.Duration
	// Clock is the run's clock (history.Writer.Since).
	Clock func() int64
	// Path is monitor.jsonl.
	Path string
	// Append continues an existing monitor.jsonl (a resumed soak)
	// instead of starting it afresh.
	Append bool
	Logger *slog.Logger
}

// Monitor samples until Stop.
type Monitor struct {
	cfg   Config
	out   *jsonl.Writer
	conn  *zk.Conn
	steps chan step
	// dropped counts steps not queued since the last sample.
	dropped atomic.Int64
	// busy is set while a read of the directories is under way; a read
	// left waiting on a silent server is not started again beside it.
	busy  atomic.Bool
	bound time.Duration
	seq   int
	// last are the servers of the latest sample written, for whoever
	// samples the ensemble's size beside the monitor (resources/) without
	// asking the servers twice.
	lastMu sync.Mutex
	last   []Server
	cancel context.CancelFunc
	done   chan struct{}
}

type step struct {
	label string
	index int64
}

// stepQueue bounds the nemesis steps waiting for their sample: a fault
// cycle makes two, so a full queue means the monitor is far behind.
const stepQueue = 32

// Start checks the monitor's words against the servers' whitelist, opens
// its session (without waiting for it) and the file, and starts sampling
// until Stop or ctx ends.
func Start(ctx context.Context, cfg Config) (*Monitor, error) {
	for _, w := range Words {
		if !slices.Contains(cluster.FourLetterWords, w) {
			return nil, fmt.Errorf("monitor: four-letter word %q is not in the servers' whitelist %v", w, cluster.FourLetterWords)
		}
	}
	if cfg.Interval <= 0 || cfg.Clock == nil || len(cfg.Nodes) == 0 {
		return nil, errors.New("monitor: needs an interval, the run's clock and the servers")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	out, err := jsonl.Create(cfg.Path, "monitor", !cfg.Append)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(cfg.Nodes))
	for i, n := range cfg.Nodes {
		addrs[i] = n.ClientAddr()
	}
	conn, _, err := zk.Connect(addrs, cfg.SessionTimeout, zk.WithLogger(quiet{cfg.Logger}), zk.WithLogInfo(false))
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("monitor: connect: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &Monitor{cfg: cfg, out: out, conn: conn, steps: make(chan step, stepQueue),
		bound: Bound(cfg.Interval), cancel: cancel, done: make(chan struct{})}
	go m.loop(ctx)
	return m, nil
}

// Bound is the time a sample may take at interval: most of it, so that
// a silent server delays the next sample by little, and at most 2 s.
func Bound(interval time.Duration) time.Duration { return min(interval*8/10, 2*time.Second) }

// Step asks for a sample now, for the nemesis step label (history index
// index). It never blocks: the nemesis must not wait for the monitor.
// Safe on a nil Monitor.
func (m *Monitor) Step(label string, index int64) {
	if m == nil {
		return
	}
	select {
	case m.steps <- step{label, index}:
	default:
		m.dropped.Add(1)
	}
}

// Stop ends sampling, closes the session and the file, and returns the
// first error writing the file (the samples before it are kept). Safe on
// a nil Monitor and twice.
func (m *Monitor) Stop() error {
	if m == nil {
		return nil
	}
	m.cancel()
	<-m.done
	return m.out.Close()
}

func (m *Monitor) loop(ctx context.Context) {
	defer close(m.done)
	defer m.conn.Close()
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	m.sample(ctx, step{index: -1})
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-m.steps:
			m.sample(ctx, s)
		case <-t.C:
			m.sample(ctx, step{index: -1})
		}
	}
}

// sample takes one sample within the bound and writes it.
func (m *Monitor) sample(parent context.Context, st step) {
	ctx, cancel := context.WithTimeout(parent, m.bound)
	defer cancel()
	s := Sample{Seq: m.seq, TimeNS: m.cfg.Clock(), Wall: time.Now().UnixNano(), Why: WhyInterval,
		Dropped: int(m.dropped.Swap(0))}
	m.seq++
	if st.index >= 0 {
		s.Why, s.Step, s.HistoryIndex = WhyNemesis, st.label, &st.index
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Servers = servers(ctx, m.cfg.Nodes) }()
	s.Dirs = m.readDirs(ctx)
	wg.Wait()
	s.TookNS = int64(time.Since(t0))
	if parent.Err() != nil {
		// Stopped mid-sample: what it holds is the stop, not the ensemble.
		return
	}
	if id := m.conn.SessionID(); id != 0 {
		s.Session = SessionHex(id)
	}
	if err := m.out.Write(s); err != nil {
		m.cfg.Logger.Warn("monitor: sample not written; the monitor writes no more", "err", err)
	}
	m.lastMu.Lock()
	m.last = s.Servers
	m.lastMu.Unlock()
}

// LastServers are the servers' mntr and cons of the latest sample; false
// before the first or on a nil Monitor.
func (m *Monitor) LastServers() ([]Server, bool) {
	if m == nil {
		return nil, false
	}
	m.lastMu.Lock()
	defer m.lastMu.Unlock()
	return slices.Clone(m.last), m.last != nil
}

// readDirs reads every lock directory within ctx. go-zookeeper takes no
// context and a request to a paused server waits until the client gives
// that connection up, so the read runs beside the sample; if ctx ends
// first, the directories are errors, and until the read comes back later
// samples do not start another.
func (m *Monitor) readDirs(ctx context.Context) []Dir {
	if !m.busy.CompareAndSwap(false, true) {
		return dirErrors(m.cfg.Dirs, "the previous read is still waiting for an answer")
	}
	res := make(chan []Dir, 1)
	go func() {
		defer m.busy.Store(false)
		ds := make([]Dir, len(m.cfg.Dirs))
		for i, p := range m.cfg.Dirs {
			ds[i] = readDir(m.conn, p)
		}
		res <- ds
	}()
	select {
	case ds := <-res:
		return ds
	case <-ctx.Done():
		return dirErrors(m.cfg.Dirs, fmt.Sprintf("no answer within %s (session state %s)", m.bound, m.conn.State()))
	}
}

func dirErrors(paths []string, why string) []Dir {
	ds := make([]Dir, len(paths))
	for i, p := range paths {
		ds[i] = Dir{Path: p, Error: why}
	}
	return ds
}

// readDir is `ls dir`, `stat dir` and `stat` of each child, as zkCli
// would do them (no watch is set).
func readDir(conn *zk.Conn, path string) Dir {
	d := Dir{Path: path}
	names, st, err := conn.Children(path)
	if err != nil {
		d.Error = "ls: " + err.Error()
		return d
	}
	d.Cversion, d.NumChildren = st.Cversion, st.NumChildren
	d.Children = make([]Child, 0, len(names))
	for _, n := range names {
		c := Child{Name: n, Seq: SeqOf(n)}
		ok, cs, err := conn.Exists(path + "/" + n)
		switch {
		case err != nil:
			c.Error = "stat: " + err.Error()
		case !ok:
			c.Gone = true
		default:
			c.Czxid = cs.Czxid
			if cs.EphemeralOwner != 0 {
				c.Owner = SessionHex(cs.EphemeralOwner)
			}
		}
		d.Children = append(d.Children, c)
	}
	slices.SortStableFunc(d.Children, func(a, b Child) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), strings.Compare(a.Name, b.Name))
	})
	return d
}

// servers asks every server for mntr and cons at once, each bounded by
// ctx: a paused server accepts and never answers, and is an error.
func servers(ctx context.Context, nodes []cluster.Node) []Server {
	out := make([]Server, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		out[i] = Server{ID: n.ID(), Addr: n.ClientAddr()}
		wg.Add(2)
		go func() {
			defer wg.Done()
			ans, err := cluster.FourLetter(ctx, out[i].Addr, "mntr")
			if err == nil {
				out[i].Mntr, err = ParseMntr(ans)
			}
			if err != nil {
				out[i].MntrError = err.Error()
			}
		}()
		go func() {
			defer wg.Done()
			ans, err := cluster.FourLetter(ctx, out[i].Addr, "cons")
			if err == nil {
				out[i].Sessions, err = cluster.ParseCons(ans)
			}
			if err != nil {
				out[i].ConsError = err.Error()
			}
		}()
	}
	wg.Wait()
	return out
}

// quiet sends go-zookeeper's chatter (reconnects, session ids) to debug:
// the monitor's own session is not the run's business.
type quiet struct{ l *slog.Logger }

func (q quiet) Printf(format string, args ...any) {
	q.l.Debug("monitor zk: " + fmt.Sprintf(format, args...))
}
