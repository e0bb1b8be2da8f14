package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/worker"
)

// Subjects measured by default, the lock subjects that exist besides the
// zoo's deliberately broken recipes: the seed recipe, zk-lock (go-zookeeper's
// zk.Lock) and Curator's InterProcessMutex.
const (
	Seed       = "seed"
	ZKLock     = "zk-lock"
	Curator    = "curator"
	SubjectRaw = "raw"
)

// DefaultSubjects are the subjects of a bench without --subjects.
var DefaultSubjects = []string{Seed, ZKLock, Curator}

// benchRoot is the persistent parent of everything the bench creates.
const benchRoot = "/bench"

// acquireTimeout bounds one acquire: on the hot lock a client waits behind
// every other.
const acquireTimeout = 20 * time.Second

// rawPairs measures create+delete pairs of ephemeral-sequential nodes on
// n sessions of the controller, under one parent (hot) or eight: what a
// lock hand-off costs ZooKeeper at least.
func (e *env) rawPairs(ctx context.Context, layout string) (Figure, error) {
	conns := make([]*zk.Conn, e.cfg.Clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, _, err := zk.Connect(strings.Split(e.connect(), ","), e.cfg.SessionTimeout, zk.WithLogger(zkQuiet{}))
		if err != nil {
			return Figure{}, fmt.Errorf("raw pairs: connect: %w", err)
		}
		conns[i] = c
	}
	// go-zookeeper takes no context: closing the sessions ends the calls.
	defer context.AfterFunc(ctx, func() {
		for _, c := range conns {
			c.Close()
		}
	})()
	dirs := make([]string, e.cfg.Clients)
	for i := range dirs {
		dirs[i] = path.Join(benchRoot, SubjectRaw, keyOf(SubjectRaw, layout, i))
		if err := ensurePath(conns[0], dirs[i]); err != nil {
			return Figure{}, err
		}
	}
	acl := zk.WorldACL(zk.PermAll)
	f, err := window(ctx, e.cfg.Clients, e.cfg.Warmup, e.cfg.Window, e.probe(ctx, nil), func(_ context.Context, i int) error {
		p, err := conns[i].Create(dirs[i]+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		if err := conns[i].Delete(p, -1); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		return nil
	})
	f.Subject, f.Kind, f.Layout, f.Includes = SubjectRaw, KindPairs, layout, Includes(KindPairs)
	return f, err
}

// ensurePath creates p and its parents, persistent and world-writable.
func ensurePath(c *zk.Conn, p string) error {
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		cur += "/" + part
		if _, err := c.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

// zkQuiet drops go-zookeeper's connection chatter.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// subjectFigures starts the subject's workers (process numbers from
// first) and measures lock+unlock and whole sections, hot and on 8 keys,
// with the same processes.
func (e *env) subjectFigures(ctx context.Context, subject string, first int) ([]Figure, error) {
	t := time.Now()
	ws, err := e.startWorkers(ctx, subject, path.Join(benchRoot, subject), first, e.cfg.Clients)
	if err != nil {
		return nil, err
	}
	defer e.stopWorkers(ws)
	e.log.Info("workers started", "subject", subject, "n", len(ws), "took", time.Since(t).Round(time.Millisecond).String())
	pids := make([]int, len(ws))
	for i, w := range ws {
		pids[i] = w.p.PID()
	}
	var figs []Figure
	for _, kind := range []string{KindLock, KindSection} {
		for _, layout := range []string{Hot, Spread} {
			var value atomic.Int64
			f, err := window(ctx, len(ws), e.cfg.Warmup, e.cfg.Window, e.probe(ctx, pids), func(_ context.Context, i int) error {
				return e.section(ctx, ws[i].p, keyOf(subject, layout, i), kind == KindSection, value.Add(1))
			})
			if err != nil {
				return figs, fmt.Errorf("%s %s %s: %w", subject, kind, layout, err)
			}
			f.Subject, f.Kind, f.Layout, f.Includes = subject, kind, layout, Includes(kind)
			e.log.Info("figure", "name", f.Name(), "per_second", fmt.Sprintf("%.1f", f.PerSec), "failed", f.Failed)
			figs = append(figs, f)
		}
	}
	return figs, nil
}

// section is one acquire and release through the worker protocol, with
// the register's read and fenced write in between when full. A fail
// answer (timeout, refused write) is errFailed; info or no answer stops
// the measurement, since the worker's state is then unknown.
func (e *env) section(ctx context.Context, p *worker.Proc, key string, full bool, value int64) error {
	reqs := []worker.Request{{F: "acquire", Key: key, TimeoutMS: acquireTimeout.Milliseconds()}}
	if full {
		reqs = append(reqs, worker.Request{F: "read", Key: key}, worker.Request{F: "write", Key: key, Value: &value})
	}
	reqs = append(reqs, worker.Request{F: "release", Key: key})
	for i, req := range reqs {
		m, err := do(ctx, p, req)
		if err != nil {
			return err
		}
		if m.Type == worker.Fail {
			if i == 0 {
				return errFailed // nothing held: nothing to release
			}
			if req.F == "release" {
				return fmt.Errorf("release %s failed: %s", key, m.Error)
			}
			defer func() { _, _ = do(ctx, p, worker.Request{F: "release", Key: key}) }()
			return errFailed
		}
	}
	return nil
}

// do sends one request, bounded by the acquire timeout and a margin; any
// answer but ok or fail is an error.
func do(ctx context.Context, p *worker.Proc, req worker.Request) (worker.Message, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), acquireTimeout+10*time.Second)
	defer cancel()
	m, err := p.Do(rctx, req)
	if err != nil {
		return m, fmt.Errorf("%s %s: %w", req.F, req.Key, err)
	}
	if m.Type != worker.OK && m.Type != worker.Fail {
		return m, fmt.Errorf("%s %s answered %s: %s", req.F, req.Key, m.Type, m.Error)
	}
	return m, nil
}

// minOverheadPairs is the fewest pairs the overhead's median is taken
// from: the window is extended until there are that many, so a slow
// machine gives a later figure, not none.
const minOverheadPairs = 20

// overhead measures one acquire+release of recipe through a worker and
// the same recipe in this process, alternately, one client each on a key
// of its own, for the window: the difference is what the harness adds
// (the protocol's JSON lines over pipes and the worker's serving loop).
func (e *env) overhead(ctx context.Context, recipe string, process int) (*Overhead, error) {
	root := path.Join(benchRoot, "overhead-"+recipe)
	direct, err := recipes.New(recipe, recipes.Config{Servers: strings.Split(e.connect(), ","), SessionTimeout: e.cfg.SessionTimeout,
		Root: root, Token: recipes.TokenCzxid, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, fmt.Errorf("overhead: %w", err)
	}
	defer direct.Close()
	ws, err := e.startWorkers(ctx, recipe, root, process, 1)
	if err != nil {
		return nil, err
	}
	defer e.stopWorkers(ws)
	o := &Overhead{Recipe: recipe, Includes: "median acquire+release on an uncontended key: worker protocol round trips vs the recipe called in-process"}
	viaWorker := func() error { return e.section(ctx, ws[0].p, "worker", false, 0) }
	inProcess := func() error {
		if _, err := direct.Acquire(ctx, "direct", acquireTimeout); err != nil {
			return fmt.Errorf("in-process acquire: %w", err)
		}
		if err := direct.Release(ctx, "direct"); err != nil {
			return fmt.Errorf("in-process release: %w", err)
		}
		return nil
	}
	pair := func(record bool) error {
		for _, m := range []struct {
			f  func() error
			to *[]int64
		}{{inProcess, &o.DirectRawNS}, {viaWorker, &o.WorkerRawNS}} {
			t := time.Now()
			if err := m.f(); err != nil {
				return fmt.Errorf("overhead: %w", err)
			}
			if record {
				*m.to = append(*m.to, int64(time.Since(t)))
			}
		}
		return ctx.Err()
	}
	// One pair before the clock starts: the in-process client's session
	// and the worker's first request are set-up, not overhead, and on a
	// loaded machine they alone can outlast a --quick window.
	if err := pair(false); err != nil {
		return nil, err
	}
	warm := time.Now().Add(e.cfg.Warmup)
	end := warm.Add(e.cfg.Window)
	for time.Now().Before(end) || len(o.DirectRawNS) < minOverheadPairs {
		// both of a pair are recorded, or neither
		if err := pair(time.Now().After(warm)); err != nil {
			return nil, err
		}
	}
	o.settle()
	return o, nil
}
