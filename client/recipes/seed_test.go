package recipes

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
)

const testSession = 2 * time.Second

// newSeed connects a recipe to addr and waits for its session.
func newSeed(t *testing.T, addr, root, token string) *Seed {
	t.Helper()
	l, err := New("seed", Config{Servers: []string{addr}, SessionTimeout: testSession, Root: root, Token: token, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	s := l.(*Seed)
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.waitSession(ctx); err != nil {
		t.Fatalf("no session: %v", err)
	}
	return s
}

// observer is a plain client for looking at the lock tree.
func observer(t *testing.T) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{zkAddr}, testSession, zk.WithLogger(zkLogger{testlog.Logger(t)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func children(t *testing.T, c *zk.Conn, dir string) []string {
	t.Helper()
	ch, _, err := c.Children(dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("children %s: %v", dir, err)
	}
	sortQueue(ch)
	return ch
}

func acquire(t *testing.T, s *Seed, key string) Grant {
	t.Helper()
	g, err := s.Acquire(context.Background(), key, 10*time.Second)
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
	return g
}

func testRoot(t *testing.T) string {
	return "/test/" + strings.ReplaceAll(t.Name(), "/", "_")
}

func TestRegistryUnknown(t *testing.T) {
	_, err := New("no-such-recipe", Config{})
	if err == nil || !strings.Contains(err.Error(), "seed") {
		t.Fatalf("want an error listing seed, got %v", err)
	}
}

// TestQueueWatchesPredecessorOnly checks from the server's side (wchp)
// that every waiter watches exactly its immediate predecessor, then that
// the lock passes down the queue in sequence order, one holder at a time.
func TestQueueWatchesPredecessorOnly(t *testing.T) {
	needZK(t)
	root := testRoot(t)
	obs := observer(t)
	var seeds []*Seed
	for range 5 {
		seeds = append(seeds, newSeed(t, zkAddr, root, TokenCzxid))
	}
	first := acquire(t, seeds[0], "k")
	type result struct {
		i int
		g Grant
		t time.Time
	}
	got := make(chan result, 4)
	var holders atomic.Int32
	for i := 1; i < 5; i++ {
		go func() {
			g, err := seeds[i].Acquire(context.Background(), "k", 30*time.Second)
			if err != nil {
				t.Errorf("seed %d: %v", i, err)
				return
			}
			if n := holders.Add(1); n != 1 {
				t.Errorf("seed %d got the lock with %d holders", i, n)
			}
			got <- result{i, g, time.Now()}
		}()
	}
	dir := path.Join(root, "k")
	deadline := time.Now().Add(10 * time.Second)
	var queue []string
	for {
		queue = children(t, obs, dir)
		if len(queue) == 5 && watchesMatch(t, obs, dir, queue) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %v never settled into predecessor watches: %v", queue, watchesMatch(t, obs, dir, queue))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if dir+"/"+queue[0] != first.Node {
		t.Fatalf("holder %s is not first in %v", first.Node, queue)
	}

	// Release down the queue: each node's owner must be the next holder.
	holders.Store(1)
	prev := first
	prevSeed := seeds[0]
	for step := 1; step < 5; step++ {
		holders.Add(-1)
		if err := prevSeed.Release(context.Background(), "k"); err != nil {
			t.Fatalf("release %s: %v", prev.Node, err)
		}
		var r result
		select {
		case r = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("nobody got the lock after release of %s", prev.Node)
		}
		if want := dir + "/" + queue[step]; r.g.Node != want {
			t.Fatalf("step %d: %s got the lock, want next in queue %s", step, r.g.Node, want)
		}
		if r.g.Token <= prev.Token {
			t.Fatalf("czxid token did not increase: %d then %d", prev.Token, r.g.Token)
		}
		prev, prevSeed = r.g, seeds[r.i]
	}
	if err := prevSeed.Release(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if left := children(t, obs, dir); len(left) != 0 {
		t.Fatalf("nodes left after all released: %v", left)
	}
}

// watchesMatch says why the server's watches under dir differ from "each
// node's owner watches its predecessor, nothing else is watched".
func watchesMatch(t *testing.T, obs *zk.Conn, dir string, queue []string) error {
	w := wchp(t, zkAddr)
	want := map[string][]int64{}
	for i := 1; i < len(queue); i++ {
		_, st, err := obs.Exists(dir + "/" + queue[i])
		if err != nil {
			return err
		}
		want[dir+"/"+queue[i-1]] = []int64{st.EphemeralOwner}
	}
	for p, sessions := range w {
		if !strings.HasPrefix(p, dir) {
			continue
		}
		if ws, ok := want[p]; !ok || !slices.Equal(sessions, ws) {
			return fmt.Errorf("path %s watched by %x, want %x", p, sessions, want[p])
		}
	}
	for p := range want {
		if _, ok := w[p]; !ok {
			return fmt.Errorf("predecessor %s not watched", p)
		}
	}
	return nil
}

// TestMutualExclusion has five recipes contend for one key; a counter of
// holders must never exceed one.
func TestMutualExclusion(t *testing.T) {
	needZK(t)
	root := testRoot(t)
	var holders, maxHolders, grants atomic.Int32
	var wg sync.WaitGroup
	var tokMu sync.Mutex
	var tokens []int64
	for i := range 5 {
		s := newSeed(t, zkAddr, root, TokenCzxid)
		wg.Go(func() {
			for range 6 {
				g, err := s.Acquire(context.Background(), "shared", 30*time.Second)
				if err != nil {
					t.Errorf("seed %d: %v", i, err)
					return
				}
				n := holders.Add(1)
				for {
					m := maxHolders.Load()
					if n <= m || maxHolders.CompareAndSwap(m, n) {
						break
					}
				}
				if _, ok := s.Held("shared"); !ok {
					t.Errorf("seed %d: Held false right after acquire", i)
				}
				tokMu.Lock()
				tokens = append(tokens, g.Token)
				tokMu.Unlock()
				time.Sleep(5 * time.Millisecond)
				grants.Add(1)
				holders.Add(-1)
				if err := s.Release(context.Background(), "shared"); err != nil {
					t.Errorf("seed %d release: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if m := maxHolders.Load(); m != 1 {
		t.Fatalf("max simultaneous holders %d", m)
	}
	if !slices.IsSorted(tokens) || len(slices.Compact(slices.Clone(tokens))) != len(tokens) {
		t.Fatalf("czxid tokens not strictly increasing in grant order: %v", tokens)
	}
	t.Logf("%d grants, tokens %v", grants.Load(), tokens)
}

func TestAcquireTimeoutRemovesNode(t *testing.T) {
	needZK(t)
	root := testRoot(t)
	obs := observer(t)
	a, b := newSeed(t, zkAddr, root, TokenCzxid), newSeed(t, zkAddr, root, TokenCzxid)
	ga := acquire(t, a, "k")
	start := time.Now()
	_, err := b.Acquire(context.Background(), "k", 300*time.Millisecond)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %v", err)
	}
	t.Logf("timeout answered after %s", time.Since(start))
	if q := children(t, obs, path.Join(root, "k")); len(q) != 1 || path.Join(root, "k", q[0]) != ga.Node {
		t.Fatalf("after timeout queue is %v, want only %s", q, ga.Node)
	}
	if _, ok := b.Held("k"); ok {
		t.Fatal("Held after timeout")
	}

	// Cancellation: certainly not acquired, node removed too.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err = b.Acquire(ctx, "k", 10*time.Second)
	if err == nil || errors.Is(err, ErrUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want a definite cancellation, got %v", err)
	}
	if q := children(t, obs, path.Join(root, "k")); len(q) != 1 {
		t.Fatalf("after cancel queue is %v", q)
	}
	if err := a.Release(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
}

func TestTokens(t *testing.T) {
	needZK(t)
	obs := observer(t)
	for _, kind := range []string{TokenCzxid, TokenSeq} {
		t.Run(kind, func(t *testing.T) {
			root := testRoot(t)
			a, b := newSeed(t, zkAddr, root, kind), newSeed(t, zkAddr, root, kind)
			last := int64(-1)
			for i := range 4 {
				s := []*Seed{a, b}[i%2]
				g := acquire(t, s, "k")
				_, st, err := obs.Exists(g.Node)
				if err != nil {
					t.Fatal(err)
				}
				want := st.Czxid
				if kind == TokenSeq {
					want = seqOf(path.Base(g.Node))
				}
				if g.Token != want || g.Token <= last {
					t.Fatalf("grant %d: token %d (want %d, > %d)", i, g.Token, want, last)
				}
				if st.EphemeralOwner != g.Session || g.Session != s.conn.SessionID() {
					t.Fatalf("grant session %x, node owner %x", g.Session, st.EphemeralOwner)
				}
				last = g.Token
				if err := s.Release(context.Background(), "k"); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestReleaseNotHeld(t *testing.T) {
	needZK(t)
	s := newSeed(t, zkAddr, testRoot(t), TokenCzxid)
	if err := s.Release(context.Background(), "never"); !errors.Is(err, ErrNotHeld) || errors.Is(err, ErrRevoked) {
		t.Fatalf("want ErrNotHeld, got %v", err)
	}
	acquire(t, s, "k")
	if _, err := s.Acquire(context.Background(), "k", time.Second); !errors.Is(err, ErrAlreadyHeld) {
		t.Fatalf("reentrant acquire: want ErrAlreadyHeld, got %v", err)
	}
	if err := s.Release(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(context.Background(), "k"); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second release: want ErrNotHeld, got %v", err)
	}
}

// waitEvent waits for an event matching want, failing after d.
func waitEvent(t *testing.T, s *Seed, d time.Duration, what string, want func(SessionEvent) bool) SessionEvent {
	t.Helper()
	timer := time.After(d)
	for {
		select {
		case ev := <-s.Events():
			if want(ev) {
				return ev
			}
		case <-timer:
			t.Fatalf("no %s event within %s", what, d)
		}
	}
}

// TestDisconnectSuspends cuts the connection briefly: the lock is
// suspended (Held false) and comes back with the same session.
func TestDisconnectSuspends(t *testing.T) {
	needZK(t)
	p := newProxy(t, zkAddr)
	s := newSeed(t, p.addr(), testRoot(t), TokenCzxid)
	g := acquire(t, s, "k")
	p.block()
	waitEvent(t, s, 5*time.Second, "disconnected", func(e SessionEvent) bool { return e.State == StateDisconnected })
	if _, ok := s.Held("k"); ok {
		t.Fatal("Held while disconnected")
	}
	p.unblock()
	ev := waitEvent(t, s, 5*time.Second, "connected", func(e SessionEvent) bool { return e.State == StateConnected })
	if ev.Session != g.Session {
		t.Fatalf("reconnected with session %x, want %x", ev.Session, g.Session)
	}
	if _, ok := s.Held("k"); !ok {
		t.Fatal("not Held after reconnecting with the same session")
	}
	if err := s.Release(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
}

// TestExpiryLosesLock keeps the client away longer than the session
// timeout: the server expires the session, and on reconnecting the recipe
// reports expired, the lost lock, and a new session.
func TestExpiryLosesLock(t *testing.T) {
	needZK(t)
	root := testRoot(t)
	obs := observer(t)
	p := newProxy(t, zkAddr)
	s := newSeed(t, p.addr(), root, TokenCzxid)
	g := acquire(t, s, "k")
	p.block()
	waitEvent(t, s, 5*time.Second, "disconnected", func(e SessionEvent) bool { return e.State == StateDisconnected })
	// The server expires the session and deletes its node.
	deadline := time.Now().Add(3 * testSession)
	for len(children(t, obs, path.Join(root, "k"))) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("server did not delete the expired session's node")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, ok := s.Held("k"); ok {
		t.Fatal("Held while disconnected")
	}
	p.unblock()
	waitEvent(t, s, 5*time.Second, "expired", func(e SessionEvent) bool { return e.State == StateExpired && e.Lost == nil })
	lost := waitEvent(t, s, time.Second, "lost", func(e SessionEvent) bool { return e.Lost != nil })
	if *lost.Lost != g || lost.State != StateExpired {
		t.Fatalf("lost %+v (%s), want %+v", *lost.Lost, lost.State, g)
	}
	ev := waitEvent(t, s, 5*time.Second, "connected", func(e SessionEvent) bool { return e.State == StateConnected })
	if ev.Session == g.Session || ev.Session == 0 {
		t.Fatalf("new session %x, old %x", ev.Session, g.Session)
	}
	if _, ok := s.Held("k"); ok {
		t.Fatal("Held after expiry")
	}
	if err := s.Release(context.Background(), "k"); !errors.Is(err, ErrRevoked) {
		t.Fatalf("release after expiry: want ErrRevoked, got %v", err)
	}
	// The new session can take the lock again.
	g2 := acquire(t, s, "k")
	if g2.Session != ev.Session || g2.Token <= g.Token {
		t.Fatalf("new grant %+v after %+v", g2, g)
	}
}

// TestCloseReportsClosed: Close reports the session closed, then every
// grant still held and every grant whose release ended unknown as lost
// with StateClosed (docs/worker-protocol.md, "Closing the session").
func TestCloseReportsClosed(t *testing.T) {
	needZK(t)
	p := newProxy(t, zkAddr)
	s := newSeed(t, p.addr(), testRoot(t), TokenCzxid)
	held := acquire(t, s, "held")
	unsure := acquire(t, s, "unsure")
	released := acquire(t, s, "released")
	if err := s.Release(context.Background(), "released"); err != nil {
		t.Fatal(err)
	}
	p.block()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := s.Release(ctx, "unsure")
	cancel()
	if !errors.Is(err, ErrUnknown) {
		t.Fatalf("release while cut off: %v, want ErrUnknown", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var closedAt = -1
	lost := map[string]Grant{}
	i := 0
	for ev := range s.Events() {
		switch {
		case ev.Lost == nil && ev.State == StateClosed:
			if ev.Session != held.Session {
				t.Fatalf("closed session %x, want %x", ev.Session, held.Session)
			}
			closedAt = i
		case ev.Lost != nil:
			if ev.State != StateClosed || closedAt < 0 {
				t.Fatalf("lost %+v with state %s (session closed reported at %d)", *ev.Lost, ev.State, closedAt)
			}
			lost[ev.Lost.Key] = *ev.Lost
		}
		i++
	}
	if closedAt < 0 {
		t.Fatal("no closed session event")
	}
	if len(lost) != 2 || lost["held"] != held || lost["unsure"] != unsure {
		t.Fatalf("lost at close: %+v, want %+v and %+v (not %+v)", lost, held, unsure, released)
	}
}
