package nemesis

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
)

// TestPauseZKMajority runs pause-zk-majority on a real three-server
// ensemble: both followers are stopped and no server serves while it
// holds; the undo resumes them and the ensemble serves whole again. It
// also shows what the fault is for: a session silent for longer than its
// timeout during the outage is still alive once a new leader serves (no
// leader, no expiry; the new leader gives it a fresh timeout), which is
// the window in which a client that gave up its session on its own
// (Curator) comes back beside its old session's nodes.
func TestPauseZKMajority(t *testing.T) {
	ctx, c := realEnsemble(t, 3, "test-nemesis-majority", 3*time.Minute)
	leader, err := cluster.Leader(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 3 * time.Second
	session, passwd, stopPing := openPinging(t, leader.ClientAddr(), timeout)

	env := &Env{Cluster: c, Rand: rand.New(rand.NewPCG(1, 1))}
	stopPing()
	silent := time.Now()
	eff, err := pauseZKMajority{}.Inject(ctx, env)
	if eff == nil {
		t.Fatalf("no effect: %v", err)
	}
	undone := false
	t.Cleanup(func() {
		if !undone {
			_, _ = eff.Undo(context.Background())
		}
	})
	if err != nil {
		t.Fatalf("not verified: %v (%s)", err, eff.Value.Detail)
	}
	v := eff.Value
	t.Logf("in effect after %s: %s: %s", time.Since(silent).Round(time.Millisecond), v.Target, v.Detail)
	if !strings.HasPrefix(v.Target, "majority ") || strings.Count(v.Target, "pid ") != 2 || strings.Contains(v.Target, "the leader") {
		t.Errorf("target %q: want a majority of two servers, not the leader", v.Target)
	}
	if !strings.Contains(v.Detail, "no server serves") || strings.Count(v.Detail, "process state T") != 2 {
		t.Errorf("detail %q: want two servers stopped and no server serving", v.Detail)
	}
	for _, s := range cluster.Statuses(ctx, c, probeTimeout) {
		if s.Err == nil && s.Status.Serving {
			t.Errorf("n%d serves during the outage (%s)", s.Node.ID(), s.Status.Mode)
		}
	}

	// Held until the session has been silent for twice its timeout.
	time.Sleep(time.Until(silent.Add(2 * timeout)))
	type undoResult struct {
		detail string
		err    error
	}
	done := make(chan undoResult, 1)
	resumed := time.Now()
	go func() {
		u, err := eff.Undo(ctx)
		done <- undoResult{u.Detail, err}
	}()
	// As soon as a leader serves again, the silent session must still be
	// there: closeSession attaches to it (a gone session is refused). A
	// resumed follower may answer for a moment as if it still followed
	// the old epoch and then drop the connection: try again on that.
	var (
		res  closeResult
		err2 error
	)
	for ctx.Err() == nil {
		l := cluster.LeaderOf(cluster.Statuses(ctx, c, probeTimeout))
		if l == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		res, err2 = closeSession(ctx, l.ClientAddr(), session, passwd, timeout)
		if err2 == nil || errors.Is(err2, errSessionRefused) || errors.Is(err2, errReplyLost) || time.Since(resumed) > 2*timeout {
			break
		}
		t.Logf("attaching to the silent session through n%d: %v; again", l.ID(), err2)
		time.Sleep(50 * time.Millisecond)
	}
	switch {
	case errors.Is(err2, errSessionRefused):
		t.Errorf("session %s silent for %s (timeout %s) was expired by the time a leader served again (%s after the resume)",
			sessionHex(session), time.Since(silent).Round(time.Millisecond), timeout, time.Since(resumed).Round(time.Millisecond))
	case err2 != nil && !errors.Is(err2, errReplyLost):
		t.Errorf("attaching to the silent session: %v", err2)
	default:
		t.Logf("session %s silent for %s (timeout %s) still alive %s after the resume; closed at zxid %#x",
			sessionHex(session), time.Since(silent).Round(time.Millisecond), timeout, time.Since(resumed).Round(time.Millisecond), res.Zxid)
	}

	u := <-done
	undone = true
	if u.err != nil {
		t.Fatalf("undo: %v (%s)", u.err, u.detail)
	}
	t.Logf("undone in %s: %s", time.Since(resumed).Round(time.Millisecond), u.detail)
	if strings.Count(u.detail, "no longer stopped") != 2 || !strings.Contains(u.detail, "ensemble whole again") {
		t.Errorf("undo detail %q: want both servers resumed and the ensemble whole", u.detail)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Errorf("ensemble not whole after the undo: %v", err)
	}
}

// openPinging opens a session on addr and pings it until stop is called,
// which also closes the connection (the session lives on until it times
// out). It returns the session's id and password.
func openPinging(t *testing.T, addr string, timeout time.Duration) (int64, []byte, func()) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := writeFrame(conn, connectRequest(0, make([]byte, 16), timeout)); err != nil {
		t.Fatal(err)
	}
	// ConnectResponse: protocolVersion, timeOut, sessionId, passwd.
	body, err := readFrame(conn)
	if err != nil || len(body) < 20 {
		t.Fatalf("connect response from %s: %d bytes, %v", addr, len(body), err)
	}
	_ = conn.SetDeadline(time.Time{})
	session := int64(binary.BigEndian.Uint64(body[8:16]))
	n := int(binary.BigEndian.Uint32(body[16:20]))
	if session == 0 || len(body) < 20+n {
		t.Fatalf("%s gave no session (%d bytes)", addr, len(body))
	}
	passwd := append([]byte(nil), body[20:20+n]...)
	stop := make(chan struct{})
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
			select {
			case <-stop:
				return
			case <-time.After(timeout / 3):
			}
			if writeFrame(conn, req) != nil {
				return
			}
		}
	}()
	stopped := false
	stopFn := func() {
		if !stopped {
			stopped = true
			close(stop)
			conn.Close()
		}
	}
	t.Cleanup(stopFn)
	return session, passwd, stopFn
}
