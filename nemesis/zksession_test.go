package nemesis

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
)

// TestCloseSessionExpiresTheClient is expire-holder end to end against a
// one-node ensemble: the seed recipe captures its password, the minimal
// handshake closes the session with it, the recipe learns of the expiry
// while running, and the server no longer lists the session. It also pins
// down the facts the fault rests on: a wrong password is refused, and an
// already closed session cannot be closed twice.
func TestCloseSessionExpiresTheClient(t *testing.T) {
	ctx, c := realEnsemble(t, 1, "test-nemesis", 90*time.Second)
	addr := c.ConnectString()

	lock, err := recipes.NewSeed(recipes.Config{Servers: []string{addr}, SessionTimeout: 4 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	session := waitEvent(t, lock, recipes.StateConnected)
	pw, ok := lock.SessionPassword(session)
	if !ok || len(pw) != 16 {
		t.Fatalf("password of session %s: %x (%v), want 16 bytes", sessionHex(session), pw, ok)
	}
	if listing, _ := serversListing(ctx, []string{addr}, session); len(listing) != 1 {
		t.Fatalf("cons does not list the live session %s", sessionHex(session))
	}

	wrong := append([]byte(nil), pw...)
	wrong[0] ^= 0xff
	if _, err := closeSession(ctx, addr, session, wrong, 0); !errors.Is(err, errSessionRefused) {
		t.Fatalf("close with a wrong password: %v, want refused", err)
	}

	start := time.Now()
	res, err := closeSession(ctx, addr, session, pw, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, lock, recipes.StateExpired)
	t.Logf("closeSession committed at zxid 0x%x; client saw expired after %s", res.Zxid, time.Since(start))
	if listing, _, waited := waitUnlisted(ctx, []string{addr}, session, unlistedTimeout); len(listing) != 0 {
		t.Errorf("cons still lists session %s %s after its close", sessionHex(session), waited)
	} else {
		t.Logf("cons stopped listing the session %s after the client saw expired", waited)
	}
	if _, err := closeSession(ctx, addr, session, pw, 0); !errors.Is(err, errSessionRefused) {
		t.Errorf("second close of the same session: %v, want refused", err)
	}
	// The client carries on with a new session, whose password it knows too.
	next := waitEvent(t, lock, recipes.StateConnected)
	if pw2, ok := lock.SessionPassword(next); next == session || !ok || len(pw2) != 16 {
		t.Errorf("after expiry: session %s, password known %v", sessionHex(next), ok)
	}
}

// waitEvent returns the session id of the recipe's next event in state.
func waitEvent(t *testing.T, l recipes.Lock, state string) int64 {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-l.Events():
			if ev.Lost == nil && ev.State == state {
				return ev.Session
			}
		case <-timeout:
			t.Fatalf("no %s event within 20s", state)
		}
	}
}
