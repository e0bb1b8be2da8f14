package recipes

import (
	"bytes"
	"sync"

	"github.com/go-zookeeper/zk"
)

// credentials keeps the password of the last session the server granted,
// captured by capturingDialer, so that a recipe can implement
// SessionCredentials by embedding it. It has its own lock because the
// dialer's goroutine reports the password while the recipe's callback may
// hold the recipe's lock.
type credentials struct {
	mu        sync.Mutex
	pwSession int64
	pw        []byte
}

// gotPassword is the capturingDialer callback. It runs before go-zookeeper
// reports StateHasSession, so the password is known by the time the
// session is announced.
func (c *credentials) gotPassword(session int64, pw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pwSession, c.pw = session, pw
}

// SessionPassword implements SessionCredentials.
func (c *credentials) SessionPassword(session int64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if session == 0 || session != c.pwSession {
		return nil, false
	}
	return bytes.Clone(c.pw), true
}

// sessionTracker is the session as go-zookeeper's event callback has shown
// it, shared by the recipes so that they all turn the library's states into
// the same SessionEvents. The embedding recipe guards it with its own lock.
type sessionTracker struct {
	// session is the id of the live session, 0 when there is none (before
	// the first connect, after an expiry).
	session   int64
	connected bool
}

// observe moves the tracked session on by one go-zookeeper state and
// returns the event to report; ok is false when nothing changed, as for
// the disconnect go-zookeeper reports for every failed reconnect, or for
// the states before a session exists. conn is asked for the session id
// only when a session is granted.
func (t *sessionTracker) observe(state zk.State, conn *zk.Conn) (ev SessionEvent, ok bool) {
	switch state {
	case zk.StateHasSession:
		t.session, t.connected = conn.SessionID(), true
		return SessionEvent{State: StateConnected, Session: t.session}, true
	case zk.StateDisconnected:
		if !t.connected {
			return SessionEvent{}, false
		}
		t.connected = false
		return SessionEvent{State: StateDisconnected, Session: t.session}, true
	case zk.StateExpired:
		old := t.session
		t.session, t.connected = 0, false
		return SessionEvent{State: StateExpired, Session: old}, true
	default:
		return SessionEvent{}, false
	}
}
