package recipes

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
)

// The known-bug zoo: recipes that are the seed algorithm with exactly one
// classic mistake switched on (docs/background.md explains each mistake's
// harm). They exist to calibrate the harness: a harness that cannot catch
// them proves nothing when it finds no fault in the subject under test.
// Each zoo recipe is its own file that registers the seed with one switch;
// the switches live in seed.go at the one place the mistake is made, so the
// zoo never drifts from the algorithm it mutates. docs/zoo.md says which
// fault and checker catch each one.

// bugs are the switches; the zero value is the correct seed recipe.
type bugs struct {
	name string
	// herd: every waiter watches the head of the queue, not its predecessor.
	herd bool
	// assumeOnWatch: a fired watch is taken as "the lock is mine" without
	// listing the queue again.
	assumeOnWatch bool
	// getNotExists: the predecessor is watched with a data read; when it is
	// already gone no watch is set, and the waiter waits anyway.
	getNotExists bool
	// ignoreSession: Disconnected and Expired change nothing: a grant stays
	// Held, and a release that finds the node gone says "released".
	ignoreSession bool
	// releaseSmallest: release deletes the first node of the queue (held or
	// not, the lock's node "must be" the smallest) instead of its own.
	releaseSmallest bool
	// noDeleteOnTimeout: an acquire that times out gives up without
	// deleting its queue node.
	noDeleteOnTimeout bool
	// token is "" (czxid/seq as configured), tokenRandom, tokenClock or
	// tokenNone.
	token string
}

const (
	tokenRandom = "random"
	tokenClock  = "clock"
	tokenNone   = "none"
)

func (b bugs) recipeName() string {
	if b.name == "" {
		return "seed"
	}
	return b.name
}

// badToken is the token a zoo recipe uses instead of the lock node's.
func (b bugs) badToken() (int64, bool) {
	switch b.token {
	case tokenRandom:
		// A UUID-like value: unique, but says nothing about order.
		return rand.Int64N(1 << 53), true
	case tokenClock:
		// Seconds, as time.Now().Unix() or currentTimeMillis()/1000 give.
		return time.Now().Unix(), true
	case tokenNone:
		// No token at all: every grant presents the same zero.
		return 0, true
	}
	return 0, false
}

// registerZoo registers a seed recipe with the bug switches b.
func registerZoo(b bugs) {
	Register(b.name, func(cfg Config) (Lock, error) { return newSeedWithBugs(cfg, b) })
}

// CountsWakeups implements WakeupCounter: every zoo recipe counts, so that
// the herd recipe shows its herd.
func (s *Seed) CountsWakeups() bool { return true }

// releaseSmallest is the release of the release-smallest bug: whatever the
// state of our grant (held, or already lost to an expiry), delete the node
// at the head of the queue, which is ours only while we really hold the lock.
func (s *Seed) releaseSmallest(ctx context.Context, key string) error {
	s.mu.Lock()
	_, held := s.held[key]
	_, lost := s.lost[key]
	delete(s.held, key)
	delete(s.lost, key)
	s.mu.Unlock()
	if !held && !lost {
		return fmt.Errorf("release %s: %w", key, ErrNotHeld)
	}
	dir := path.Join(s.root, key)
	for {
		children, err := call(ctx, func() ([]string, error) {
			c, _, err := s.conn.Children(dir)
			return c, err
		}, nil)
		if err == nil {
			if len(children) == 0 {
				return nil
			}
			sortQueue(children)
			err = call0(ctx, func() error { return s.conn.Delete(dir+"/"+children[0], -1) })
			if err == nil || errors.Is(err, zk.ErrNoNode) {
				s.log.Info("lock released (smallest node deleted)", "key", key, "node", children[0])
				return nil
			}
		}
		if !transient(err) || ctx.Err() != nil {
			return Unknown("release "+key, err)
		}
		if err := s.pause(ctx); err != nil {
			return Unknown("release "+key, err)
		}
	}
}
