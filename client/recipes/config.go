package recipes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/internal/queue"
)

// The config workload (configuration notification:
// docs/background.md#configuration-notification):
// admins update a config node by compare-and-set on its version, clients
// watch it, re-read data and Stat on every notification and apply a newer
// version atomically. A ConfigClient is one process's side of it, admin
// and watcher in one ZooKeeper session, as a lock recipe is one process's
// side of the lock workload. The correct client is "seed" (this file); the
// zoo's config bugs are switches on it, one file each (config_*.go).

// ConfigRoot is the parent of the config nodes: the config of key K is
// ConfigRoot/K. The controller creates it, with the data of version 0,
// before any worker starts.
const ConfigRoot = "/config"

// ElectionRoot is the parent of every service's candidates in the
// election workload: the candidates of service S are children of
// ElectionRoot/S (a campaign is a lock recipe's acquire of S under it).
const ElectionRoot = "/leaders"

// ConfigVersion is one version of a config node as this client saw it:
// the Stat's version and exactly the data bytes read or written with it.
type ConfigVersion struct {
	Key     string
	Version int32
	Data    []byte
}

// ConfigEvent is, with Applied nil, a session change (Session), or a
// version the client's watch applied. Both come on one channel so that a
// reader sees them in the order they happened (a resync after a new
// session comes after that session's connected event).
type ConfigEvent struct {
	Session SessionEvent
	Applied *ConfigVersion
}

// ErrBadVersion: an update's expected version was not the node's, so the
// server wrote nothing.
var ErrBadVersion = errors.New("bad version")

// ConfigClient is a client of the config workload.
type ConfigClient interface {
	// Read reads the config of key: its version and data.
	Read(ctx context.Context, key string) (ConfigVersion, error)
	// Update sets the config of key to data if its version is expected,
	// and returns the version it produced. Any error means nothing was
	// written, except one wrapping ErrUnknown (the outcome is unknown);
	// ErrBadVersion says the version was not expected.
	Update(ctx context.Context, key string, data []byte, expected int32) (ConfigVersion, error)
	// Watch reads the config of key with a watch, applies it and returns
	// it; from then on the client keeps key's config current and reports
	// each newer version it applies as an event. It reports none before
	// the caller calls start: the caller reports the first version, and no
	// later one may be reported before it. An error means the client does
	// not watch key.
	Watch(ctx context.Context, key string) (first ConfigVersion, start func(), err error)
	// Events delivers session changes and applied versions in order; Close
	// closes it after reporting the closed session.
	Events() <-chan ConfigEvent
	// Close ends the session and the watches.
	Close() error
}

// ConfigFactory builds a config client.
type ConfigFactory func(Config) (ConfigClient, error)

var configRecipes = newRegistry[ConfigFactory]("config recipe")

// RegisterConfig makes a config client available to NewConfig by name.
func RegisterConfig(name string, f ConfigFactory) { configRecipes.add(name, f) }

// ConfigNames lists the registered config clients, sorted.
func ConfigNames() []string { return configRecipes.names() }

// NewConfig builds the config client registered as name.
func NewConfig(name string, cfg Config) (ConfigClient, error) {
	f, err := configRecipes.get(name)
	if err != nil {
		return nil, err
	}
	return f(cfg)
}

func init() { RegisterWorkload(WorkloadConfig, ConfigNames) }

func init() { registerConfigZoo(configBugs{}) }

// configBugs are the config zoo's switches; the zero value is the correct
// client, "seed".
type configBugs struct {
	name string
	// staleApply: on a notification, re-arm with exists (Stat only) and
	// apply the new version with the data read when the watch was set.
	staleApply bool
	// noRewatch: on the first notification, read without setting the
	// watch again.
	noRewatch bool
	// blindCAS: update with version -1, whatever the expected version.
	blindCAS bool
}

func registerConfigZoo(b configBugs) {
	name := b.name
	if name == "" {
		name = "seed"
	}
	RegisterConfig(name, func(cfg Config) (ConfigClient, error) { return newConfigSeed(cfg, name, b) })
}

// configSeed is the correct config client (with the zoo's switches).
type configSeed struct {
	log    *slog.Logger
	conn   *zk.Conn
	bugs   configBugs
	events *queue.Queue[ConfigEvent]
	// ready is closed once conn is set: the callback can fire before
	// zk.Connect returns.
	ready    chan struct{}
	loopDone chan struct{}
	// bg ends the watch loops on Close.
	bg       context.Context
	bgStop   context.CancelFunc
	watchers sync.WaitGroup

	credentials

	mu sync.Mutex
	sessionTracker
	// changed is closed and replaced on every session event, so that a
	// retry waiting for the connection wakes at once.
	changed  chan struct{}
	watching map[string]bool
	closed   bool
}

func newConfigSeed(cfg Config, name string, b configBugs) (*configSeed, error) {
	if len(cfg.Servers) == 0 {
		return nil, fmt.Errorf("config %s: no ZooKeeper servers", name)
	}
	if cfg.SessionTimeout <= 0 {
		return nil, fmt.Errorf("config %s: session timeout %s must be positive", name, cfg.SessionTimeout)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("recipe", name, "workload", WorkloadConfig)
	c := &configSeed{log: log, bugs: b, events: queue.New[ConfigEvent](), ready: make(chan struct{}),
		loopDone: make(chan struct{}), changed: make(chan struct{}), watching: map[string]bool{}}
	c.bg, c.bgStop = context.WithCancel(context.Background())
	conn, ec, err := zk.Connect(cfg.Servers, cfg.SessionTimeout, zk.WithEventCallback(c.onEvent),
		zk.WithLogger(zkLogger{log}), zk.WithDialer(capturingDialer(nil, c.gotPassword)))
	if err != nil {
		c.bgStop()
		c.events.Close()
		return nil, fmt.Errorf("config %s: connect %v: %w", name, cfg.Servers, err)
	}
	c.conn = conn
	close(c.ready)
	go func() {
		for range ec {
		}
		close(c.loopDone)
	}()
	if err := authenticate(conn, cfg.Auth); err != nil {
		c.Close()
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return c, nil
}

// onEvent reports session changes. Watch notifications reach the watch
// loops through their own channels.
func (c *configSeed) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	<-c.ready
	c.mu.Lock()
	defer c.mu.Unlock()
	se, ok := c.observe(ev.State, c.conn)
	if !ok {
		return
	}
	c.log.Info("session event", "state", se.State, "session", fmt.Sprintf("0x%x", se.Session))
	c.events.Push(ConfigEvent{Session: se})
	close(c.changed)
	c.changed = make(chan struct{})
}

// Events implements ConfigClient.
func (c *configSeed) Events() <-chan ConfigEvent { return c.events.Out() }

// Close implements ConfigClient: the watch loops end, the session is
// closed and reported closed.
func (c *configSeed) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.bgStop()
	c.conn.Close()
	select {
	case <-c.loopDone:
	case <-time.After(5 * time.Second):
		c.log.Warn("zk connection loop still running after close")
	}
	c.watchers.Wait()
	c.mu.Lock()
	if c.session != 0 {
		c.events.Push(ConfigEvent{Session: SessionEvent{State: StateClosed, Session: c.session}})
	}
	c.mu.Unlock()
	c.events.Close()
	return nil
}

// pause waits for a session event, ctx, or a short while, so that a retry
// after a connection error does not spin.
func (c *configSeed) pause(ctx context.Context) error {
	c.mu.Lock()
	ch := c.changed
	c.mu.Unlock()
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// retry runs op until it succeeds, fails for good, or ctx ends; only
// errors after which the same read may succeed (transient) are retried.
// It is for reads alone: a write retried after a lost reply may apply
// twice, or fail its own version check.
func (c *configSeed) retry(ctx context.Context, op func() error) error {
	for {
		err := op()
		if err == nil || !transient(err) {
			return err
		}
		if perr := c.pause(ctx); perr != nil {
			return fmt.Errorf("%w (last error: %w)", perr, err)
		}
	}
}

// snapshot is a data read's result.
type snapshot struct {
	data  []byte
	stat  *zk.Stat
	watch <-chan zk.Event
}

// Read implements ConfigClient.
func (c *configSeed) Read(ctx context.Context, key string) (ConfigVersion, error) {
	if err := validKey(key); err != nil {
		return ConfigVersion{}, err
	}
	p := ConfigRoot + "/" + key
	var got snapshot
	err := c.retry(ctx, func() error {
		var err error
		got, err = call(ctx, func() (snapshot, error) {
			d, st, err := c.conn.Get(p)
			return snapshot{data: d, stat: st}, err
		}, nil)
		return err
	})
	if err != nil {
		return ConfigVersion{}, fmt.Errorf("read %s: %w", p, err)
	}
	return ConfigVersion{Key: key, Version: got.stat.Version, Data: got.data}, nil
}

// Update implements ConfigClient: one setData, never retried (see retry).
func (c *configSeed) Update(ctx context.Context, key string, data []byte, expected int32) (ConfigVersion, error) {
	if err := validKey(key); err != nil {
		return ConfigVersion{}, err
	}
	p := ConfigRoot + "/" + key
	version := expected
	if c.bugs.blindCAS {
		version = -1 // bug: the check the admin's read was for is dropped
	}
	st, err := call(ctx, func() (*zk.Stat, error) { return c.conn.Set(p, data, version) }, nil)
	switch {
	case err == nil:
		c.log.Info("config updated", "key", key, "expected", expected, "version", st.Version)
		return ConfigVersion{Key: key, Version: st.Version, Data: data}, nil
	case errors.Is(err, zk.ErrBadVersion):
		return ConfigVersion{}, fmt.Errorf("%w: setData %s with version %d", ErrBadVersion, p, version)
	case definite(err):
		return ConfigVersion{}, fmt.Errorf("update %s: %w", p, err)
	default:
		return ConfigVersion{}, Unknown("update "+p, err)
	}
}

// definite reports errors after which a write certainly was not applied:
// the server's refusals, and go-zookeeper's ErrNoServer, which it gives
// only to requests it never sent. Anything else (a lost connection, an
// expired session, a context that ended while the request was queued or
// in flight) leaves the write possibly applied.
func definite(err error) bool {
	for _, d := range []error{zk.ErrNoNode, zk.ErrNoAuth, zk.ErrBadArguments, zk.ErrInvalidPath, zk.ErrNoServer} {
		if errors.Is(err, d) {
			return true
		}
	}
	return false
}

// Watch implements ConfigClient.
func (c *configSeed) Watch(ctx context.Context, key string) (ConfigVersion, func(), error) {
	if err := validKey(key); err != nil {
		return ConfigVersion{}, nil, err
	}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return ConfigVersion{}, nil, errors.New("config: closed")
	case c.watching[key]:
		c.mu.Unlock()
		return ConfigVersion{}, nil, fmt.Errorf("watch %s: already watching", key)
	}
	c.watching[key] = true
	c.mu.Unlock()
	p := ConfigRoot + "/" + key
	var got snapshot
	err := c.retry(ctx, func() error {
		var err error
		got, err = c.getW(ctx, p)
		return err
	})
	if err != nil {
		c.mu.Lock()
		delete(c.watching, key)
		c.mu.Unlock()
		return ConfigVersion{}, nil, fmt.Errorf("watch %s: %w", p, err)
	}
	first := ConfigVersion{Key: key, Version: got.stat.Version, Data: got.data}
	c.log.Info("config applied", "key", key, "version", first.Version)
	start := make(chan struct{})
	c.watchers.Add(1)
	go c.watchLoop(first, got.watch, start)
	return first, sync.OnceFunc(func() { close(start) }), nil
}

// getW reads p's data and Stat and sets a data watch.
func (c *configSeed) getW(ctx context.Context, p string) (snapshot, error) {
	return call(ctx, func() (snapshot, error) {
		d, st, w, err := c.conn.GetW(p)
		return snapshot{data: d, stat: st, watch: w}, err
	}, nil)
}

// watchLoop keeps one key's config current: on every notification it
// re-arms the watch (ZooKeeper's watches fire once) and applies what it
// read if it is newer than what it applied. A session expiry drops the
// watch with a NotWatching notification; the re-read then waits for the
// new session, which is the resync a client owes after an expiry.
func (c *configSeed) watchLoop(applied ConfigVersion, watch <-chan zk.Event, start <-chan struct{}) {
	defer c.watchers.Done()
	select {
	case <-start:
	case <-c.bg.Done():
		return
	}
	p := ConfigRoot + "/" + applied.Key
	for {
		select {
		case ev := <-watch:
			c.log.Info("config notification", "key", applied.Key, "type", ev.Type.String(), "err", ev.Err)
		case <-c.bg.Done():
			return
		}
		next, w, ok := c.rearm(p, applied)
		if !ok {
			return
		}
		watch = w
		if next == nil || next.Version <= applied.Version {
			continue // never apply an older (or the same) version
		}
		applied = *next
		c.log.Info("config applied", "key", applied.Key, "version", applied.Version)
		c.events.Push(ConfigEvent{Applied: &applied})
	}
}

// rearm is what the client does on a notification: read the config and
// set the watch again. It returns the version read (nil when the node is
// missing), the new watch (nil if none was set), and false once the client
// is closing. It retries until it has read, however long the session
// takes to come back.
func (c *configSeed) rearm(p string, applied ConfigVersion) (*ConfigVersion, <-chan zk.Event, bool) {
	for {
		v, w, err := c.rearmOnce(p, applied)
		if err == nil {
			return v, w, true
		}
		if c.bg.Err() != nil {
			return nil, nil, false
		}
		c.log.Warn("config re-read failed, retrying", "path", p, "err", err)
		if c.pause(c.bg) != nil {
			return nil, nil, false
		}
	}
}

func (c *configSeed) rearmOnce(p string, applied ConfigVersion) (*ConfigVersion, <-chan zk.Event, error) {
	key := applied.Key
	switch {
	case c.bugs.staleApply:
		// bug: exists re-arms the watch and tells the new version, and the
		// data applied with it is what was read when the watch was set.
		st, err := call(c.bg, func() (snapshot, error) {
			_, st, w, err := c.conn.ExistsW(p)
			return snapshot{stat: st, watch: w}, err
		}, nil)
		if err != nil {
			return nil, nil, err
		}
		return &ConfigVersion{Key: key, Version: st.stat.Version, Data: applied.Data}, st.watch, nil
	case c.bugs.noRewatch:
		// bug: the data is read again, but without a watch.
		got, err := call(c.bg, func() (snapshot, error) {
			d, st, err := c.conn.Get(p)
			return snapshot{data: d, stat: st}, err
		}, nil)
		if err != nil {
			return nil, nil, err
		}
		return &ConfigVersion{Key: key, Version: got.stat.Version, Data: got.data}, nil, nil
	}
	got, err := c.getW(c.bg, p)
	if errors.Is(err, zk.ErrNoNode) {
		// The node is gone: watch for it to come back.
		ex, err := call(c.bg, func() (snapshot, error) {
			exists, st, w, err := c.conn.ExistsW(p)
			if err == nil && exists {
				err = errRaced
			}
			return snapshot{stat: st, watch: w}, err
		}, nil)
		if err != nil {
			return nil, nil, err
		}
		return nil, ex.watch, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &ConfigVersion{Key: key, Version: got.stat.Version, Data: got.data}, got.watch, nil
}

// errRaced: the node came back between a read that found it missing and
// the exists that was to watch for it; read again.
var errRaced = errors.New("config node re-created meanwhile")
