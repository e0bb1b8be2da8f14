package recipes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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
