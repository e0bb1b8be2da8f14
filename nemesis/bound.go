package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Every injection and every undo runs through bound, the one place where
// the nemesis keeps a fault from hanging the run: the fault gets a
// context that ends at its bound, and the scheduler stops waiting for it
// a little later whether or not it honoured that context.

// cutGrace is how long past its bound the scheduler still waits for an
// injection or undo that honours its context to return with its own
// error, before abandoning it.
const cutGrace = time.Second

// errBound is the cause of a context ended by its bound, which tells the
// bound's end from the end of the run.
var errBound = errors.New("bound reached")

// timeoutError says an injection or undo overran its bound.
type timeoutError struct {
	what  string
	after time.Duration
	// err is what the fault returned at its deadline; nil when it did not
	// return at all and was abandoned.
	err error
}

func (e *timeoutError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("%s timed out after %s: still running %s later, abandoned (the final restore sweeps what it left)",
			e.what, e.after, cutGrace)
	}
	return fmt.Sprintf("%s timed out after %s: %v", e.what, e.after, e.err)
}

func (e *timeoutError) Unwrap() error { return e.err }

// bound runs op with a context that ends after d (or with ctx) and returns
// its result. An op that fails once its bound has passed returns a
// timeoutError; one that has not returned cutGrace after its bound is
// abandoned: bound returns a timeoutError at once, and whatever op
// returns later goes to late.
func bound[T any](ctx context.Context, d time.Duration, what string, op func(context.Context) (T, error), late func(T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	octx, cancel := context.WithTimeoutCause(ctx, d, errBound)
	done := make(chan result, 1)
	go func() {
		defer cancel()
		v, err := op(octx)
		done <- result{v, err}
	}()
	cut := time.NewTimer(d + cutGrace)
	defer cut.Stop()
	select {
	case r := <-done:
		if r.err != nil && errors.Is(context.Cause(octx), errBound) {
			return r.v, &timeoutError{what: what, after: d, err: r.err}
		}
		return r.v, r.err
	case <-cut.C:
		go func() {
			r := <-done
			if late != nil {
				late(r.v, r.err)
			}
		}()
		var zero T
		return zero, &timeoutError{what: what, after: d}
	}
}

// scope is one fault instance from its injection until its undo begins:
// the session watches it starts run under its context, and end stops
// them and waits for them, so nothing a fault started outlives it.
type scope struct {
	s      *Scheduler
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	ended bool
	wg    sync.WaitGroup
}

// newScope opens the scope of one injection. It outlives the injection's
// own bound (a watch runs while the fault is in effect) but not the
// scheduler's undo of it; the end of the run ends it through Heal.
func (s *Scheduler) newScope(ctx context.Context) *scope {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &scope{s: s, ctx: sctx, cancel: cancel}
}

// start runs fn in the scope; false if the scope has already ended (an
// abandoned injection that carries on).
func (sc *scope) start(fn func(ctx context.Context)) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.ended {
		return false
	}
	sc.wg.Add(1)
	go func() {
		defer sc.wg.Done()
		fn(sc.ctx)
	}()
	return true
}

// end stops what runs in the scope and waits for it. It must not be
// called with the scheduler's op lock held: a watch may be waiting for it
// to record what it saw.
func (sc *scope) end() {
	if sc == nil {
		return
	}
	sc.mu.Lock()
	sc.ended = true
	sc.mu.Unlock()
	sc.cancel()
	sc.wg.Wait()
}
