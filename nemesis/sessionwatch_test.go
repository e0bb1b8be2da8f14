package nemesis

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
)

// TestSessionWatchOnRealServers runs the session watch against a real
// three-server ensemble, with sessions opened by the client handshake of
// zksession.go: one whose client stops talking (as a paused or cut-off
// worker does) and one that keeps pinging. The silent session is seen gone
// once ZooKeeper expires it, never before its timeout; the pinging one
// never; and while a server does not answer, nothing is concluded.
func TestSessionWatchOnRealServers(t *testing.T) {
	ctx, c := realEnsemble(t, 3, "test-nemesis-watch", 2*time.Minute)
	leader, err := cluster.Leader(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	// Sessions live on the leader and one follower; the other follower is
	// the one paused later (pausing the leader would drop every
	// connection of its followers, which is not the case tested here).
	var follower, paused cluster.Node
	for _, n := range c.Nodes() {
		switch {
		case n.ID() == leader.ID():
		case follower == nil:
			follower = n
		default:
			paused = n
		}
	}
	h := history.NewMemory()
	s, err := newScheduler(Config{History: h, Env: Env{Cluster: c, Rand: rand.New(rand.NewPCG(1, 1))}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := s.newScope(ctx)
	env := s.cfg.Env
	env.scope = sc
	const timeout = time.Second

	live := openSession(t, leader.ClientAddr(), timeout, true)
	bornSilent := h.Since()
	silent := openSession(t, follower.ClientAddr(), timeout, false)
	env.watchSession(watchSpec{Process: 1, PID: 11, Session: live})
	env.watchSession(watchSpec{Process: 2, PID: 22, Session: silent})

	gone := waitGone(t, h, 2, 15*time.Second)
	v := *gone.Value
	if gone.Time < bornSilent+int64(timeout) {
		t.Errorf("session-gone at %s, before the session could expire (opened after %s, timeout %s)",
			time.Duration(gone.Time), time.Duration(bornSilent), timeout)
	}
	if v.LastSeenNS == nil || *v.LastSeenNS < bornSilent+int64(timeout/2) || *v.LastSeenNS >= gone.Time {
		t.Errorf("last seen %v: want a poll late in the session's life, before the observation at %d", v.LastSeenNS, gone.Time)
	}
	if v.Verified == nil || !*v.Verified || v.PID != 22 || v.Session != sessionHex(silent) {
		t.Errorf("record %+v: want verified, pid 22, session %s", v, sessionHex(silent))
	}
	t.Logf("silent session %s seen gone %s after its timeout ran out (last seen %s before): %s",
		v.Session, time.Duration(gone.Time-bornSilent-int64(timeout)).Round(time.Millisecond),
		time.Duration(gone.Time-*v.LastSeenNS).Round(time.Millisecond), v.Detail)

	// A server that does not answer might list the session: no verdict
	// until it answers again.
	unseen := openSession(t, follower.ClientAddr(), timeout, false)
	env.watchSession(watchSpec{Process: 3, PID: 33, Session: unseen})
	time.Sleep(200 * time.Millisecond) // seen alive first
	if _, err := paused.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(timeout + 2*time.Second)
	if got := goneFor(h, 3); got != nil {
		t.Errorf("session-gone recorded while n%d did not answer: %+v", paused.ID(), *got.Value)
	}
	resumed := h.Since()
	if _, err := paused.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if g := waitGone(t, h, 3, 30*time.Second); g.Time < resumed {
		t.Errorf("session-gone at %d, before the silent server answered again (%d)", g.Time, resumed)
	}
	if got := goneFor(h, 1); got != nil {
		t.Errorf("the pinging session was recorded gone: %+v", *got.Value)
	}
	ended := time.Now()
	sc.end()
	if d := time.Since(ended); d > 3*time.Second {
		t.Errorf("the watch took %s to stop", d)
	}
}

// goneFor is the session-gone record of process p, nil if none.
func goneFor(h *history.Memory, p int) *history.Event {
	for _, e := range h.Events() {
		if e.F == history.FSessionGone && e.Type == history.OK && e.Value.TargetProcess != nil && *e.Value.TargetProcess == p {
			return &e
		}
	}
	return nil
}

func waitGone(t *testing.T, h *history.Memory, p int, within time.Duration) *history.Event {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if e := goneFor(h, p); e != nil {
			return e
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no session-gone for process %d within %s", p, within)
	return nil
}

// openSession opens a new session on addr with the minimal handshake and
// keeps its connection open; with ping it sends a ping every third of the
// timeout, as a live client does, else nothing, as a stopped one.
func openSession(t *testing.T, addr string, timeout time.Duration, ping bool) int64 {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := writeFrame(conn, connectRequest(0, make([]byte, 16), timeout)); err != nil {
		t.Fatal(err)
	}
	body, err := readFrame(conn)
	if err != nil || len(body) < 16 {
		t.Fatalf("connect response from %s: %d bytes, %v", addr, len(body), err)
	}
	_ = conn.SetDeadline(time.Time{})
	session := int64(binary.BigEndian.Uint64(body[8:16]))
	if session == 0 {
		t.Fatalf("%s gave no session", addr)
	}
	if ping {
		go func() {
			for {
				if _, err := readFrame(conn); err != nil {
					return
				}
			}
		}()
		go func() {
			req := binary.BigEndian.AppendUint32(nil, uint32(0xfffffffe)) // xid -2
			req = binary.BigEndian.AppendUint32(req, 11)                  // OpPing
			for {
				if writeFrame(conn, req) != nil {
					return
				}
				time.Sleep(timeout / 3)
			}
		}()
	}
	return session
}
