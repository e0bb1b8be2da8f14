package recipes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkchaos/zkchaos/internal/queue"
)

func init() {
	Register("seed", func(cfg Config) (Lock, error) { return NewSeed(cfg) })
}

// SeedConfig is the configuration of the seed recipe (the common Config).
type SeedConfig = Config

// Seed is the reference recipe (docs/background.md#the-queue-lock-recipe):
// ephemeral sequential nodes with protected names under a persistent
// parent, a watch on the immediate predecessor only, and session tracking
// through the event callback, because go-zookeeper's event channel drops
// events when full and silently opens a new session after an expiry.
type Seed struct {
	root    string
	token   string
	timeout time.Duration
	// acl is what every node we create carries (Config.Auth.ACL).
	acl    []zk.ACL
	log    *slog.Logger
	conn   *zk.Conn
	events *queue.Queue[SessionEvent]
	// bugs switches on the classic mistakes of the known-bug zoo (zoo.go);
	// all false for seed itself.
	bugs bugs

	// bg ends the background deletions of queue nodes on Close.
	bg     context.Context
	bgStop context.CancelFunc

	loopDone chan struct{}

	// ready is closed once conn is set: the callback can fire before
	// zk.Connect returns.
	ready chan struct{}

	credentials

	mu sync.Mutex
	sessionTracker
	// changed is closed and replaced on every session event, waking every
	// waiter so it re-examines the world.
	changed   chan struct{}
	held      map[string]Grant
	acquiring map[string]bool
	// lost holds grants revoked by a session event and not yet released,
	// so that their Release says ErrRevoked rather than ErrNotHeld.
	lost map[string]Grant
	// unsure holds, by node, grants being released or whose release ended
	// unknown: their node may still exist while their session lives, so
	// they are reported lost when it expires, changes or is closed.
	unsure map[string]Grant
	closed bool
}

// NewSeed connects to ZooKeeper; the session is established in the
// background and announced as a StateConnected event.
func NewSeed(cfg Config) (*Seed, error) { return newSeedWithBugs(cfg, bugs{}) }

// newSeedWithBugs builds the seed recipe with the zoo's bug switches b.
func newSeedWithBugs(cfg Config, b bugs) (*Seed, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("seed: no ZooKeeper servers")
	}
	if cfg.SessionTimeout <= 0 {
		return nil, fmt.Errorf("seed: session timeout %s must be positive", cfg.SessionTimeout)
	}
	root := cfg.Root
	if root == "" {
		root = DefaultRoot
	}
	if root[0] != '/' || (len(root) > 1 && root[len(root)-1] == '/') {
		return nil, fmt.Errorf("seed: root %q must be an absolute ZooKeeper path", root)
	}
	tok := cfg.Token
	if tok == "" {
		tok = TokenCzxid
	}
	if tok != TokenCzxid && tok != TokenSeq {
		return nil, fmt.Errorf("seed: unknown token kind %q (want %s or %s)", tok, TokenCzxid, TokenSeq)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("recipe", b.recipeName())
	s := &Seed{
		root:      root,
		token:     tok,
		acl:       cfg.Auth.ACL(),
		timeout:   cfg.SessionTimeout,
		log:       log,
		events:    queue.New[SessionEvent](),
		bugs:      b,
		ready:     make(chan struct{}),
		changed:   make(chan struct{}),
		held:      map[string]Grant{},
		acquiring: map[string]bool{},
		lost:      map[string]Grant{},
		unsure:    map[string]Grant{},
	}
	s.bg, s.bgStop = context.WithCancel(context.Background())
	conn, ec, err := zk.Connect(cfg.Servers, cfg.SessionTimeout,
		zk.WithEventCallback(s.onEvent), zk.WithLogger(zkLogger{log}),
		zk.WithDialer(capturingDialer(nil, s.gotPassword)))
	if err != nil {
		s.events.Close()
		return nil, fmt.Errorf("seed: connect %v: %w", cfg.Servers, err)
	}
	s.conn = conn
	close(s.ready)
	// The library closes its event channel when its connection loop has
	// ended; Close waits for that so no callback runs after it returns.
	s.loopDone = make(chan struct{})
	go func() {
		for range ec {
		}
		close(s.loopDone)
	}()
	if err := authenticate(conn, cfg.Auth); err != nil {
		s.Close()
		return nil, fmt.Errorf("seed: %w", err)
	}
	return s, nil
}

// onEvent tracks the session. It runs on go-zookeeper's goroutines and so
// never blocks (the queue is unbounded).
func (s *Seed) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	<-s.ready
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.observe(ev.State, s.conn)
	if !ok {
		return
	}
	switch se.State {
	case StateConnected:
		// A grant from another session is gone: go-zookeeper replaced an
		// expired session without us seeing the expiry.
		if !s.bugs.ignoreSession {
			s.loseLocked(func(g Grant) bool { return g.Session != se.Session }, StateSessionChanged)
		}
		s.emitLocked(se)
	case StateDisconnected:
		s.emitLocked(se)
	case StateExpired:
		s.emitLocked(se)
		if !s.bugs.ignoreSession {
			s.loseLocked(func(Grant) bool { return true }, StateExpired)
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Seed) emitLocked(ev SessionEvent) {
	s.log.Info("session event", "state", ev.State, "session", fmt.Sprintf("0x%x", ev.Session))
	s.events.Push(ev)
}

// loseLocked revokes the held grants matching lose and reports each, and
// likewise the grants whose release is in progress or ended unknown.
func (s *Seed) loseLocked(lose func(Grant) bool, why string) {
	for k, g := range s.held {
		if !lose(g) {
			continue
		}
		delete(s.held, k)
		s.lost[k] = g
		s.reportLostLocked(g, why)
	}
	for n, g := range s.unsure {
		if lose(g) {
			delete(s.unsure, n)
			s.reportLostLocked(g, why)
		}
	}
}

func (s *Seed) reportLostLocked(g Grant, why string) {
	s.log.Warn("lock lost", "key", g.Key, "node", g.Node, "token", g.Token, "why", why)
	s.events.Push(SessionEvent{State: why, Session: g.Session, Lost: &g})
}

// sessionChanged returns the channel closed at the next session event.
func (s *Seed) sessionChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// currentSession is the live session id (0 if none) and whether it is
// connected.
func (s *Seed) currentSession() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session, s.connected
}

func (s *Seed) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// waitSession blocks until there is a connected session and returns it.
func (s *Seed) waitSession(ctx context.Context) (int64, error) {
	for {
		s.mu.Lock()
		id, ok, ch, closed := s.session, s.connected, s.changed, s.closed
		s.mu.Unlock()
		if closed {
			return 0, errors.New("seed: closed")
		}
		if ok && id != 0 {
			return id, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// pause waits for a session event, ctx, or a short while, so that retries
// after connection errors do not spin.
func (s *Seed) pause(ctx context.Context) error {
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-s.sessionChanged():
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// Held is true only while the grant's own session is connected: while
// disconnected the session may already be expired on the server and
// another client may hold the lock.
func (s *Seed) Held(key string) (Grant, bool) {
	s.mu.Lock()
	g, ok := s.held[key]
	sess, connected := s.session, s.connected
	s.mu.Unlock()
	if ok && s.bugs.ignoreSession {
		return g, true // bug: a grant is forever, whatever the session did
	}
	if !ok || !connected || sess != g.Session {
		return Grant{}, false
	}
	// The callback can lag the connection by a scheduling delay; the
	// library's own state is the freshest a client can know.
	if s.conn.State() != zk.StateHasSession || s.conn.SessionID() != g.Session {
		return Grant{}, false
	}
	return g, true
}

// Events implements Lock.
func (s *Seed) Events() <-chan SessionEvent { return s.events.Out() }

// Close ends the session, so the server deletes every node of ours, then
// reports the close and the grants that ended with it.
func (s *Seed) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	s.bgStop()
	s.conn.Close()
	select {
	case <-s.loopDone:
	case <-time.After(5 * time.Second):
		s.log.Warn("zk connection loop still running after close")
	}
	s.mu.Lock()
	s.reportClosedLocked()
	s.mu.Unlock()
	s.events.Close()
	return nil
}

// reportClosedLocked reports the session this client closed and, after it,
// every grant that was held or unsure, as lost with StateClosed. The
// session event comes first so a reader sees why before what.
func (s *Seed) reportClosedLocked() {
	if s.session != 0 {
		s.emitLocked(SessionEvent{State: StateClosed, Session: s.session})
	}
	for k, g := range s.held {
		delete(s.held, k)
		s.reportLostLocked(g, StateClosed)
	}
	for n, g := range s.unsure {
		delete(s.unsure, n)
		s.reportLostLocked(g, StateClosed)
	}
}

// seqDigits is the width of ZooKeeper's sequence suffix.
const seqDigits = 10

// errStartOver: our queue node vanished (session expired) or is not ours;
// enqueue again.
var errStartOver = errors.New("queue node gone")

// Acquire follows the queue recipe
// (docs/background.md#the-queue-lock-recipe): enqueue a protected ephemeral
// sequential node, then wait behind the immediate predecessor until ours is
// first.
func (s *Seed) Acquire(ctx context.Context, key string, timeout time.Duration) (Grant, error) {
	if err := validKey(key); err != nil {
		return Grant{}, err
	}
	if timeout <= 0 {
		return Grant{}, fmt.Errorf("acquire %s: timeout %s must be positive", key, timeout)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Grant{}, errors.New("seed: closed")
	}
	if _, ok := s.held[key]; ok || s.acquiring[key] {
		s.mu.Unlock()
		return Grant{}, fmt.Errorf("acquire %s: %w", key, ErrAlreadyHeld)
	}
	s.acquiring[key] = true
	delete(s.lost, key)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.acquiring, key)
		s.mu.Unlock()
	}()

	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dir := path.Join(s.root, key)
	// One GUID for every attempt of this acquire: cleanup then removes
	// whatever any attempt left behind by its prefix alone.
	prefix := "_c_" + uuid.NewString() + "-lock-"
	// No ensurePath up front: the key's parents exist on every acquire but
	// the first, and each create of an existing node is a write that goes
	// through the quorum to fail with NodeExists (three of them per
	// acquire, more than the lock itself costs: chaos bench). enqueue
	// makes the parents when its create finds none (NoNode).
	for {
		node, czxid, owner, err := s.enqueue(actx, dir, prefix)
		if err == nil {
			var g Grant
			g, err = s.wait(actx, key, dir, prefix, node, czxid, owner)
			if err == nil {
				return g, nil
			}
		}
		if errors.Is(err, errStartOver) {
			s.log.Info("queue node gone, enqueueing again", "key", key, "node", node)
			continue
		}
		return Grant{}, s.abort(ctx, dir, prefix, err)
	}
}

// validKey keeps keys to one path component.
func validKey(key string) error {
	if key == "" || strings.ContainsAny(key, "/\x00") || key == "." || key == ".." {
		return fmt.Errorf("invalid lock key %q", key)
	}
	return nil
}

// ensurePath creates the persistent parents, tolerating NodeExists (that
// also makes a create whose reply was lost harmless to retry).
func (s *Seed) ensurePath(ctx context.Context, p string) error {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		for {
			_, err := call(ctx, func() (string, error) {
				return s.conn.Create(cur, nil, 0, s.acl)
			}, nil)
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				break
			}
			if !transient(err) {
				return fmt.Errorf("create %s: %w", cur, err)
			}
			if err := s.pause(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// enqueue creates our queue node and returns it with its czxid and owning
// session. A create whose reply was lost is found again by its GUID and
// accepted only if the current session owns it.
func (s *Seed) enqueue(ctx context.Context, dir, prefix string) (node string, czxid, owner int64, err error) {
	for {
		if _, err := s.waitSession(ctx); err != nil {
			return "", 0, 0, err
		}
		created, err := call(ctx, func() (string, error) {
			return s.conn.Create(dir+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence, s.acl)
		}, s.deleteLate)
		switch {
		case err == nil:
			st, err := s.stat(ctx, created)
			if err != nil && transient(err) {
				// Our node exists or expired with its session; the next
				// round finds it by GUID or creates another, and wait
				// deletes the spare.
				if err := s.pause(ctx); err != nil {
					return "", 0, 0, err
				}
				continue
			}
			if err != nil {
				return "", 0, 0, err
			}
			if sess, _ := s.currentSession(); st == nil || st.EphemeralOwner != sess {
				continue // made by a session that has since expired
			}
			return created, st.Czxid, st.EphemeralOwner, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := s.ensurePath(ctx, dir); err != nil {
				return "", 0, 0, err
			}
		case transient(err):
			if found, st, ferr := s.findOwn(ctx, dir, prefix); ferr != nil {
				if !transient(ferr) {
					return "", 0, 0, ferr
				}
			} else if found != "" {
				return found, st.Czxid, st.EphemeralOwner, nil
			}
			if err := s.pause(ctx); err != nil {
				return "", 0, 0, err
			}
		default:
			return "", 0, 0, fmt.Errorf("create in %s: %w", dir, err)
		}
	}
}

// deleteLate removes a node whose create completed after its caller gave
// up: nobody will ever wait on it, and left alone it would block the queue
// for as long as our session lives.
func (s *Seed) deleteLate(node string, err error) {
	if err != nil || node == "" {
		return
	}
	s.log.Info("deleting queue node created after its acquire gave up", "node", node)
	go s.removeUntilGone(s.bg, path.Dir(node), path.Base(node)[:len(path.Base(node))-seqDigits])
}

// stat returns the node's stat, nil if it does not exist.
func (s *Seed) stat(ctx context.Context, node string) (*zk.Stat, error) {
	type res struct {
		ok bool
		st *zk.Stat
	}
	r, err := call(ctx, func() (res, error) {
		ok, st, err := s.conn.Exists(node)
		return res{ok, st}, err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("exists %s: %w", node, err)
	}
	if !r.ok {
		return nil, nil
	}
	return r.st, nil
}

// findOwn looks for a node with our prefix owned by the current session.
func (s *Seed) findOwn(ctx context.Context, dir, prefix string) (string, *zk.Stat, error) {
	children, err := call(ctx, func() ([]string, error) {
		c, _, err := s.conn.Children(dir)
		return c, err
	}, nil)
	if err != nil {
		return "", nil, fmt.Errorf("children %s: %w", dir, err)
	}
	sess, _ := s.currentSession()
	for _, c := range children {
		if !strings.HasPrefix(c, prefix) {
			continue
		}
		st, err := s.stat(ctx, dir+"/"+c)
		if err != nil {
			return "", nil, err
		}
		if st != nil && sess != 0 && st.EphemeralOwner == sess {
			return dir + "/" + c, st, nil
		}
	}
	return "", nil, nil
}

// seqOf is the sequence suffix of a queue node name, -1 if it has none.
func seqOf(name string) int64 {
	if len(name) < seqDigits {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-seqDigits:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// sortQueue orders children by sequence suffix (the prefixes differ, so
// a plain string sort would order by GUID).
func sortQueue(children []string) {
	sort.Slice(children, func(i, j int) bool { return seqOf(children[i]) < seqOf(children[j]) })
}

// wait lists the queue until our node is first, watching only the
// immediate predecessor (no herd). A watch firing only means "look again".
func (s *Seed) wait(ctx context.Context, key, dir, prefix, node string, czxid, owner int64) (Grant, error) {
	name := path.Base(node)
	for {
		changed := s.sessionChanged()
		if sess, _ := s.currentSession(); sess != owner && sess != 0 {
			return Grant{}, errStartOver
		}
		children, err := call(ctx, func() ([]string, error) {
			c, _, err := s.conn.Children(dir)
			return c, err
		}, nil)
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				return Grant{}, errStartOver
			}
			if !transient(err) {
				return Grant{}, fmt.Errorf("children %s: %w", dir, err)
			}
			if err := s.pause(ctx); err != nil {
				return Grant{}, err
			}
			continue
		}
		sortQueue(children)
		idx := -1
		var queue []string
		for _, c := range children {
			switch {
			case c == name:
				idx = len(queue)
				queue = append(queue, c)
			case strings.HasPrefix(c, prefix):
				// A leftover of an earlier attempt of ours would make us
				// wait on ourselves.
				go s.deleteNode(s.bg, dir+"/"+c)
			default:
				queue = append(queue, c)
			}
		}
		if idx < 0 {
			return Grant{}, errStartOver
		}
		if idx == 0 {
			return s.grant(key, node, czxid, owner)
		}
		pred := dir + "/" + queue[idx-1]
		if s.bugs.herd {
			pred = dir + "/" + queue[0] // bug: every waiter watches the head
		}
		type res struct {
			ok bool
			ch <-chan zk.Event
		}
		r, err := call(ctx, func() (res, error) {
			if s.bugs.getNotExists {
				// bug: a data watch instead of exists; on NoNode no watch
				// is left, yet the waiter goes on to wait for one.
				_, _, ch, err := s.conn.GetW(pred)
				if errors.Is(err, zk.ErrNoNode) {
					return res{true, ch}, nil
				}
				return res{err == nil, ch}, err
			}
			ok, _, ch, err := s.conn.ExistsW(pred)
			return res{ok, ch}, err
		}, nil)
		if err != nil {
			if !transient(err) {
				return Grant{}, fmt.Errorf("exists %s: %w", pred, err)
			}
			if err := s.pause(ctx); err != nil {
				return Grant{}, err
			}
			continue
		}
		if !r.ok {
			continue
		}
		s.log.Debug("waiting on predecessor", "key", key, "node", name, "pred", queue[idx-1])
		select {
		case ev := <-r.ch:
			// A watch dropped because the session ended is a session
			// event, not a wake-up (the protocol's definition).
			if ev.Type != zk.EventNotWatching {
				countWakeup(ctx)
			}
			if s.bugs.assumeOnWatch {
				// bug: the watch fired, so "we must be first now".
				return s.grant(key, node, czxid, owner)
			}
		case <-changed:
		case <-ctx.Done():
			return Grant{}, ctx.Err()
		}
	}
}

// grant records the lock as held, unless the session it was won under
// ended meanwhile.
func (s *Seed) grant(key, node string, czxid, owner int64) (Grant, error) {
	tok := czxid
	if s.token == TokenSeq {
		tok = seqOf(path.Base(node))
	}
	if t, ok := s.bugs.badToken(); ok {
		tok = t
	}
	g := Grant{Key: key, Node: node, Token: tok, Session: owner}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != owner {
		return Grant{}, errStartOver
	}
	s.held[key] = g
	s.log.Info("lock acquired", "key", key, "node", node, "token", tok, "session", fmt.Sprintf("0x%x", owner))
	return g, nil
}

// abort ends a failed acquire: our queue nodes are removed (retrying while
// the session lives, bounded so the caller gets an answer) before saying
// "not acquired". If removal cannot be confirmed the outcome is unknown and
// removal goes on in the background.
func (s *Seed) abort(ctx context.Context, dir, prefix string, cause error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout+time.Second)
	defer cancel()
	if s.bugs.noDeleteOnTimeout && errors.Is(cause, context.DeadlineExceeded) && ctx.Err() == nil {
		return ErrTimeout // bug: gives up, leaving its node in the queue
	}
	if err := s.removeUntilGone(cctx, dir, prefix); err != nil {
		go s.removeUntilGone(s.bg, dir, prefix)
		return Unknown("acquire", fmt.Errorf("%w; queue node removal unconfirmed: %w", cause, err))
	}
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("acquire canceled, queue node removed: %w", ctx.Err())
	case errors.Is(cause, context.DeadlineExceeded):
		return ErrTimeout
	default:
		return fmt.Errorf("acquire: %w", cause)
	}
}

// removeUntilGone deletes every child of dir with our prefix until a
// listing shows none (an expired session's nodes are gone by themselves).
func (s *Seed) removeUntilGone(ctx context.Context, dir, prefix string) error {
	for {
		if s.isClosed() {
			return errors.New("seed: closed")
		}
		children, err := call(ctx, func() ([]string, error) {
			c, _, err := s.conn.Children(dir)
			return c, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err == nil {
			left := 0
			for _, c := range children {
				if strings.HasPrefix(c, prefix) {
					left++
					if derr := s.deleteNode(ctx, dir+"/"+c); derr != nil {
						err = derr
					}
				}
			}
			if left == 0 || err == nil {
				return nil // none left, or every one deleted
			}
		}
		if err != nil && !transient(err) && ctx.Err() == nil && !errors.Is(err, zk.ErrClosing) {
			s.log.Warn("removing queue node", "dir", dir, "err", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, zk.ErrClosing) {
			return err
		}
		if perr := s.pause(ctx); perr != nil {
			return perr
		}
	}
}

// deleteNode deletes one node; NoNode counts as done.
func (s *Seed) deleteNode(ctx context.Context, node string) error {
	err := call0(ctx, func() error { return s.conn.Delete(node, -1) })
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return fmt.Errorf("delete %s: %w", node, err)
}

// Release deletes our own lock node, and nothing else. The grant stops
// being Held before the delete is sent: whatever the outcome, the caller
// must not do protected work under it any more.
func (s *Seed) Release(ctx context.Context, key string) error {
	if s.bugs.releaseSmallest {
		return s.releaseSmallest(ctx, key)
	}
	s.mu.Lock()
	g, ok := s.held[key]
	if !ok {
		_, lost := s.lost[key]
		delete(s.lost, key)
		s.mu.Unlock()
		if lost {
			return fmt.Errorf("release %s: %w", key, ErrRevoked)
		}
		return fmt.Errorf("release %s: %w", key, ErrNotHeld)
	}
	delete(s.held, key)
	// Until the outcome is known the grant is unsure: an expiry now must
	// still be reported as its loss.
	s.unsure[g.Node] = g
	s.mu.Unlock()
	err := s.deleteOwn(ctx, g)
	if err == nil || errors.Is(err, ErrRevoked) {
		s.mu.Lock()
		delete(s.unsure, g.Node)
		s.mu.Unlock()
	}
	return err
}

// deleteOwn deletes the grant's node and says what is known of it: nil,
// ErrRevoked, or ErrUnknown with the reason.
func (s *Seed) deleteOwn(ctx context.Context, g Grant) error {
	key := g.Key
	// sent: an earlier attempt may have been applied although its reply
	// was lost, so a later NoNode may be our own delete.
	sent := false
	for {
		err := call0(ctx, func() error { return s.conn.Delete(g.Node, -1) })
		switch {
		case err == nil:
			s.log.Info("lock released", "key", key, "node", g.Node, "token", g.Token)
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if s.bugs.ignoreSession {
				return nil // bug: "already gone, so released"
			}
			sess, _ := s.currentSession()
			if sent && sess == g.Session {
				return nil // our earlier delete went through
			}
			if sent {
				return Unknown("release "+key, fmt.Errorf("the connection was lost after the delete of %s was sent and the session then expired: the node is gone, but whether this release deleted it is unknown", g.Node))
			}
			s.log.Warn("release found the lock node gone: revoked", "key", key, "node", g.Node)
			return fmt.Errorf("release %s: %w", key, ErrRevoked)
		case ctx.Err() != nil:
			s.deleteInBackground(g.Node)
			return Unknown("release "+key, fmt.Errorf("delete of %s not confirmed in time (sent before: %v): %w", g.Node, sent, err))
		case errors.Is(err, zk.ErrClosing) || s.isClosed():
			return Unknown("release "+key, err)
		case transient(err):
			sent = sent || ambiguous(err)
			if err := s.pause(ctx); err != nil {
				s.deleteInBackground(g.Node)
				return Unknown("release "+key, fmt.Errorf("delete of %s not confirmed in time (sent before: %v): %w", g.Node, sent, err))
			}
		default:
			return Unknown("release "+key, err)
		}
	}
}

// deleteInBackground keeps deleting a node the caller gave up on, so a
// lock we no longer use does not block the queue while our session lives.
func (s *Seed) deleteInBackground(node string) {
	go func() {
		for s.bg.Err() == nil {
			err := s.deleteNode(s.bg, node)
			if err == nil || !transient(err) {
				return
			}
			if s.pause(s.bg) != nil {
				return
			}
		}
	}()
}
