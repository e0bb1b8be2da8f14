package leased

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/host/proc"
)

// launchService starts three servers of prog on loopback for one test
// (skipped where the service is not installed) and returns their
// addresses.
func launchService(t *testing.T, prog local.Program) []string {
	t.Helper()
	if err := prog.Check(); err != nil {
		t.Skipf("no %s: %v", prog.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := local.Launch(ctx, local.Config{Nodes: 3, Dir: t.TempDir(), Program: prog,
		Env: proc.Env(fmt.Sprintf("test-recipes-%s-%d", prog.Name(), os.Getpid()), proc.Self())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return strings.Split(c.ConnectString(), ",")
}

// TestServiceRecipes: each other service's recipe grants a key to one
// client at a time, with tokens from the service that grow from grant to
// grant; a second client times out while the key is held; a release
// after the lease ran out (the holder's renewal stopped, as a paused
// client's does) is refused revoked, after a lost event; Close reports
// the close.
func TestServiceRecipes(t *testing.T) {
	for _, tc := range []struct {
		name string
		prog local.Program
		ttl  time.Duration
	}{
		{"redis-lock", local.Redis{}, time.Second},
		{"redlock", local.Redis{}, time.Second},
		{"etcd-mutex", local.Etcd{}, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := launchService(t, tc.prog)
			cfg := recipes.Config{Servers: addrs, SessionTimeout: tc.ttl, Root: "/test/" + tc.name}
			a, err := recipes.New(tc.name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := recipes.New(tc.name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ctx := context.Background()
			g1, err := a.Acquire(ctx, "K", 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := a.Held("K"); !ok {
				t.Errorf("granted but not held")
			}
			if _, err := b.Acquire(ctx, "K", 300*time.Millisecond); !errors.Is(err, recipes.ErrTimeout) {
				t.Errorf("second client while held: %v, want a timeout", err)
			}
			if err := a.Release(ctx, "K"); err != nil {
				t.Fatal(err)
			}
			g2, err := b.Acquire(ctx, "K", 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if g2.Token <= g1.Token {
				t.Errorf("tokens %d then %d: not increasing", g1.Token, g2.Token)
			}
			if err := b.Release(ctx, "K"); err != nil {
				t.Fatal(err)
			}
			if err := a.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			var states []string
			for ev := range a.Events() {
				states = append(states, ev.State)
			}
			if len(states) == 0 || states[0] != recipes.StateConnected || states[len(states)-1] != recipes.StateClosed {
				t.Errorf("events %v: want connected first and closed last", states)
			}
		})
	}
}

// TestLeaseValidity: a grant whose lease runs out by the client's clock
// is no longer held, and losing it reports one lost event.
func TestLeaseValidity(t *testing.T) {
	l := newLeases(nil, 7)
	defer l.close(func(context.Context, *leaseGrant) error { return nil })
	<-l.Events() // connected
	l.add(recipes.Grant{Key: "K", Token: 3, Session: 7}, time.Now().Add(50*time.Millisecond), 0, nil)
	if _, ok := l.Held("K"); !ok {
		t.Fatal("not held within its validity")
	}
	time.Sleep(60 * time.Millisecond)
	if _, ok := l.Held("K"); ok {
		t.Error("held past its validity")
	}
	l.mu.Lock()
	lg := l.grants["K"]
	l.mu.Unlock()
	l.lose(lg, recipes.StateExpired)
	l.lose(lg, recipes.StateExpired)
	ev := <-l.Events()
	if ev.Lost == nil || ev.Lost.Token != 3 || ev.State != recipes.StateExpired {
		t.Errorf("event %+v: want K lost, expired", ev)
	}
	if _, lost, err := l.take("K"); err != nil || !lost {
		t.Errorf("take: lost %v, %v", lost, err)
	}
}
