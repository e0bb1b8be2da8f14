package recipes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/internal/queue"
)

func init() {
	Register("zk-lock", func(cfg Config) (Lock, error) { return NewZKLock(cfg) })
}

// ZKLock is go-zookeeper's own zk.Lock used the way its users use it: a
// fresh zk.NewLock per acquisition, Lock(), work, Unlock(). It is a subject,
// not a reference: its gaps are what the harness is meant to show.
//
//   - Lock() takes no timeout and cannot be cancelled. Acquire runs it in a
//     goroutine; when the acquire's time is up the outcome is honestly
//     unknown (the call is still queued and may yet succeed), so Acquire
//     answers ErrUnknown, and if Lock() later succeeds the lock is given
//     straight back.
//   - On errors Lock() returns without deleting the node it created: the
//     node stays queued while the session lives.
//   - It exposes neither its node nor a token. The holder's node is the
//     head of the queue, so Acquire lists the queue once and takes the head
//     if the session owns it; the token is that node's sequence number.
//   - It has no ownership check and no notice of lock loss: Held is true
//     from Lock() to Unlock(), whatever the session does, and no lost event
//     is ever reported (session events are, from the connection), except
//     for the grants still held when the worker closes the session itself.
//   - Its wait is hidden inside Lock(); the wake-ups of an acquire are the
//     watch notifications the connection delivers for the key's queue while
//     that acquire runs (Lock() sets one data watch on its predecessor at a
//     time and lists the queue again each time it fires).
type ZKLock struct {
	root   string
	acl    []zk.ACL
	log    *slog.Logger
	conn   *zk.Conn
	events *queue.Queue[SessionEvent]
	ready  chan struct{}
	credentials

	mu sync.Mutex
	sessionTracker
	held map[string]zkHeld
	// busy marks keys with a Lock() call still running (possibly abandoned
	// by a timed-out Acquire).
	busy map[string]bool
	// waking maps the queue directory of each Acquire in progress to its
	// wake-up counter; an abandoned Lock() no longer has an entry, so its
	// wake-ups count for nobody.
	waking map[string]*atomic.Int64
	// unsure are grants whose Unlock ended unknown: reported lost when the
	// worker closes the session.
	unsure []Grant
	closed bool
}

type zkHeld struct {
	lock  *zk.Lock
	grant Grant
}

// NewZKLock connects; the session is announced as a StateConnected event.
func NewZKLock(cfg Config) (*ZKLock, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("zk-lock: no ZooKeeper servers")
	}
	root := cfg.Root
	if root == "" {
		root = DefaultRoot
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("recipe", "zk-lock")
	if cfg.Token == TokenCzxid {
		log.Info("zk-lock exposes no czxid: fencing with the sequence number of its node")
	}
	l := &ZKLock{root: root, acl: cfg.Auth.ACL(), log: log, events: queue.New[SessionEvent](), ready: make(chan struct{}),
		held: map[string]zkHeld{}, busy: map[string]bool{}, waking: map[string]*atomic.Int64{}}
	conn, ec, err := zk.Connect(cfg.Servers, cfg.SessionTimeout, zk.WithEventCallback(l.onEvent),
		zk.WithLogger(zkLogger{log}), zk.WithDialer(capturingDialer(nil, l.gotPassword)))
	if err != nil {
		l.events.Close()
		return nil, fmt.Errorf("zk-lock: connect %v: %w", cfg.Servers, err)
	}
	l.conn = conn
	close(l.ready)
	go func() {
		for range ec {
		}
	}()
	if err := authenticate(conn, cfg.Auth); err != nil {
		l.Close()
		return nil, fmt.Errorf("zk-lock: %w", err)
	}
	return l, nil
}

// onEvent reports the session (zk.Lock itself never hears of it) and
// counts watch notifications for the queues being waited on. go-zookeeper
// calls it for every notification before it wakes the watch's channel, so
// the count is in before Lock() can return.
func (l *ZKLock) onEvent(ev zk.Event) {
	<-l.ready
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev.Type {
	case zk.EventSession:
		if se, ok := l.observe(ev.State, l.conn); ok {
			l.events.Push(se)
		}
	case zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeCreated, zk.EventNodeChildrenChanged:
		if n := l.waking[path.Dir(ev.Path)]; n != nil {
			n.Add(1)
		}
	}
}

// CountsWakeups implements WakeupCounter.
func (l *ZKLock) CountsWakeups() bool { return true }

// countWakeups counts notifications for dir into the counter of ctx until
// the returned function is called.
func (l *ZKLock) countWakeups(ctx context.Context, dir string) (stop func()) {
	n := wakeupsOf(ctx)
	if n == nil {
		return func() {}
	}
	l.mu.Lock()
	l.waking[dir] = n
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.waking, dir)
		l.mu.Unlock()
	}
}

// Acquire implements Lock.
func (l *ZKLock) Acquire(ctx context.Context, key string, timeout time.Duration) (Grant, error) {
	if err := validKey(key); err != nil {
		return Grant{}, err
	}
	l.mu.Lock()
	if _, ok := l.held[key]; ok || l.busy[key] || l.closed {
		l.mu.Unlock()
		return Grant{}, fmt.Errorf("acquire %s: %w", key, ErrAlreadyHeld)
	}
	l.busy[key] = true
	l.mu.Unlock()

	dir := path.Join(l.root, key)
	defer l.countWakeups(ctx, dir)()
	zl := zk.NewLock(l.conn, dir, l.acl)
	done := make(chan error, 1)
	go func() { done <- zl.Lock() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			l.setBusy(key, false)
			// zk.Lock leaves its node behind on errors; nothing to undo
			// that we could find without its name.
			return Grant{}, fmt.Errorf("acquire %s: zk.Lock: %w (its queue node may be left behind)", key, err)
		}
		g, err := l.grantOf(ctx, key, dir)
		if err != nil {
			l.setBusy(key, false)
			if uerr := zl.Unlock(); uerr != nil {
				l.log.Warn("giving back a lock whose node could not be found", "key", key, "err", uerr)
			}
			return Grant{}, Unknown("acquire "+key, err)
		}
		l.mu.Lock()
		delete(l.busy, key)
		l.held[key] = zkHeld{lock: zl, grant: g}
		l.mu.Unlock()
		l.log.Info("lock acquired", "key", key, "node", g.Node, "token", g.Token)
		return g, nil
	case <-t.C:
	case <-ctx.Done():
	}
	// Lock() cannot be stopped: it may still succeed, so the outcome is
	// unknown. Should it succeed, give the lock straight back.
	go func() {
		err := <-done
		if err == nil {
			if uerr := zl.Unlock(); uerr != nil {
				l.log.Warn("unlocking an abandoned acquisition", "key", key, "err", uerr)
			} else {
				l.log.Info("abandoned acquisition succeeded late; unlocked", "key", key)
			}
		}
		l.setBusy(key, false)
	}()
	return Grant{}, Unknown("acquire "+key, errors.New("zk.Lock has no timeout: still queued, may acquire later"))
}

func (l *ZKLock) setBusy(key string, b bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b {
		l.busy[key] = true
	} else {
		delete(l.busy, key)
	}
}

// grantOf finds the node zk.Lock holds: the head of the queue, if our
// session owns it.
func (l *ZKLock) grantOf(ctx context.Context, key, dir string) (Grant, error) {
	children, err := call(ctx, func() ([]string, error) {
		c, _, err := l.conn.Children(dir)
		return c, err
	}, nil)
	if err != nil {
		return Grant{}, fmt.Errorf("children %s: %w", dir, err)
	}
	if len(children) == 0 {
		return Grant{}, fmt.Errorf("queue %s is empty right after Lock()", dir)
	}
	sortQueue(children)
	node := dir + "/" + children[0]
	type res struct {
		ok bool
		st *zk.Stat
	}
	r, err := call(ctx, func() (res, error) {
		ok, st, err := l.conn.Exists(node)
		return res{ok, st}, err
	}, nil)
	if err != nil {
		return Grant{}, fmt.Errorf("exists %s: %w", node, err)
	}
	sess := l.conn.SessionID()
	if !r.ok || r.st.EphemeralOwner != sess {
		return Grant{}, fmt.Errorf("head of %s is not ours after Lock()", dir)
	}
	return Grant{Key: key, Node: node, Token: seqOf(children[0]), Session: sess}, nil
}

// Held is what a zk.Lock user knows: Lock() returned and Unlock() has not
// been called. Nothing else is checked, because zk.Lock offers nothing.
func (l *ZKLock) Held(key string) (Grant, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.held[key]
	return h.grant, ok
}

// Release calls Unlock. It deletes the node zk.Lock created; if that node
// is already gone (the session expired), the lock was revoked unnoticed.
func (l *ZKLock) Release(ctx context.Context, key string) error {
	l.mu.Lock()
	h, ok := l.held[key]
	delete(l.held, key)
	l.mu.Unlock()
	if !ok {
		return fmt.Errorf("release %s: %w", key, ErrNotHeld)
	}
	err := call0(ctx, h.lock.Unlock)
	switch {
	case err == nil:
		l.log.Info("lock released", "key", key, "node", h.grant.Node)
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("release %s: %w", key, ErrRevoked)
	default:
		l.mu.Lock()
		l.unsure = append(l.unsure, h.grant)
		l.mu.Unlock()
		return Unknown("release "+key, fmt.Errorf("unlock of %s: %w", h.grant.Node, err))
	}
}

// Events implements Lock.
func (l *ZKLock) Events() <-chan SessionEvent { return l.events.Out() }

// Close ends the session.
func (l *ZKLock) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.conn.Close()
	l.mu.Lock()
	if l.session != 0 {
		l.events.Push(SessionEvent{State: StateClosed, Session: l.session})
	}
	gone := l.unsure
	for _, h := range l.held {
		gone = append(gone, h.grant)
	}
	l.held, l.unsure = map[string]zkHeld{}, nil
	l.mu.Unlock()
	for _, g := range gone {
		l.events.Push(SessionEvent{State: StateClosed, Session: g.Session, Lost: &g})
	}
	l.events.Close()
	return nil
}
