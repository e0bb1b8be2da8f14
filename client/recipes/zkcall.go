package recipes

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
)

// call runs a go-zookeeper call so that ctx is honoured: the library takes
// no context and queues requests while disconnected, so a call can block
// until the session comes back. When ctx ends first the call keeps running
// and, if late is not nil, late gets its eventual result; that is how a
// create whose caller gave up still gets its node deleted.
func call[T any](ctx context.Context, f func() (T, error), late func(T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if late != nil {
			go func() {
				r := <-ch
				late(r.v, r.err)
			}()
		}
		var zero T
		return zero, ctx.Err()
	}
}

// call0 is call for functions that only return an error.
func call0(ctx context.Context, f func() error) error {
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, f() }, nil)
	return err
}

// transient reports errors after which the same request may succeed once
// the session is back. ErrConnectionClosed also means the request may have
// been applied (its reply was lost); see ambiguous.
func transient(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}

// ambiguous reports errors that leave it open whether the server applied
// the request: go-zookeeper fails requests already sent with
// ErrConnectionClosed when the connection drops, while ErrNoServer is only
// given to requests that were never sent.
func ambiguous(err error) bool {
	return err != nil && !errors.Is(err, zk.ErrNoServer) && !errors.Is(err, zk.ErrNoNode) &&
		!errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrBadVersion) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// zkLogger sends go-zookeeper's own log lines (connects, session ids,
// reconnect failures) to slog, where they sit next to the recipe's.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Info("zk: " + fmt.Sprintf(format, args...))
}

// SessionCredentials is implemented by recipes that can tell the password
// of their ZooKeeper session. go-zookeeper keeps it unexported, yet with
// the id it is all a nemesis needs to expire the session from outside (a
// second connection that closes it), while the client keeps running.
type SessionCredentials interface {
	// SessionPassword returns the password the server gave session, if
	// this client has seen that session granted.
	SessionPassword(session int64) ([]byte, bool)
}

// capturingDialer wraps dial so that the session id and password of every
// connect response the server sends are handed to got. It reads what
// go-zookeeper reads, never changes it, so the client behaves as without it.
func capturingDialer(dial zk.Dialer, got func(session int64, passwd []byte)) zk.Dialer {
	if dial == nil {
		dial = net.DialTimeout
	}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &sniffConn{Conn: c, got: got}, nil
	}
}

// sniffConn parses the first frame a server sends on a connection, which
// is always the connect response. Only go-zookeeper's receiving goroutine
// reads, so the parse state needs no lock.
type sniffConn struct {
	net.Conn
	got  func(int64, []byte)
	buf  []byte
	done bool
}

// maxConnectResponse bounds the bytes buffered for the first frame; a
// connect response is about 40 bytes, anything longer is not one.
const maxConnectResponse = 4096

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done && n > 0 {
		c.feed(p[:n])
	}
	return n, err
}

func (c *sniffConn) feed(b []byte) {
	c.buf = append(c.buf, b...)
	if len(c.buf) < 4 {
		return
	}
	size := int(binary.BigEndian.Uint32(c.buf))
	if size > maxConnectResponse {
		c.done, c.buf = true, nil
		return
	}
	if len(c.buf) < 4+size {
		return
	}
	if sess, pw, ok := parseConnectResponse(c.buf[4 : 4+size]); ok && sess != 0 {
		c.got(sess, pw)
	}
	c.done, c.buf = true, nil
}

// parseConnectResponse decodes the body of a ZooKeeper ConnectResponse
// (after its length prefix): protocolVersion int32, timeOut int32,
// sessionId int64, passwd as an int32 length and bytes, then an optional
// readOnly byte. A session id of 0 means the server refused the session
// (expired, or a wrong password).
func parseConnectResponse(b []byte) (session int64, passwd []byte, ok bool) {
	if len(b) < 20 {
		return 0, nil, false
	}
	session = int64(binary.BigEndian.Uint64(b[8:16]))
	n := int32(binary.BigEndian.Uint32(b[16:20]))
	if n < 0 || int(n) > len(b)-20 {
		return 0, nil, false
	}
	return session, bytes.Clone(b[20 : 20+n]), true
}
