package recipes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// This file is the recipe example of docs/extending.md, quoted there
// verbatim (docs/extending_test.go keeps the two identical). A real
// recipe is the same code in a file of its own, without the test.

// init registers the recipe under its --recipe name.
func init() {
	Register("example-forget-release", func(cfg Config) (Lock, error) {
		s, err := NewSeed(cfg)
		if err != nil {
			return nil, err
		}
		return &forgetRelease{Lock: s, forgotten: map[string]bool{}}, nil
	})
}

// forgetRelease is the seed recipe with one mistake: Release forgets the
// grant but never deletes its node. The history says released, the queue
// still holds the node, and every later waiter of the key waits until
// the session ends: the liveness checker sees the key free and its
// waiters stuck.
type forgetRelease struct {
	Lock
	mu        sync.Mutex
	forgotten map[string]bool
}

// Release forgets key without a word to the server.
func (f *forgetRelease) Release(_ context.Context, key string) error {
	if _, ok := f.Held(key); !ok {
		return fmt.Errorf("release %s: %w", key, ErrNotHeld)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten[key] = true
	return nil
}

// Held says no for a forgotten key, whatever the seed still holds.
func (f *forgetRelease) Held(key string) (Grant, bool) {
	f.mu.Lock()
	forgotten := f.forgotten[key]
	f.mu.Unlock()
	if forgotten {
		return Grant{}, false
	}
	return f.Lock.Held(key)
}

// TestExampleForgetRelease: the recipe is found by name and, against a
// real ZooKeeper, keeps the next waiter out after its release.
func TestExampleForgetRelease(t *testing.T) {
	const name = "example-forget-release"
	if !slices.Contains(Names(), name) {
		t.Fatalf("%s not among %v", name, Names())
	}
	if _, err := New(name, Config{}); err == nil {
		t.Error("built without servers")
	}
	needZK(t)
	ctx := context.Background()
	cfg := Config{Servers: []string{zkAddr}, SessionTimeout: 4 * time.Second, Root: "/example-forget-release"}
	a, err := New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Acquire(ctx, "k", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, held := a.Held("k"); held {
		t.Error("held after its release")
	}
	if _, err := b.Acquire(ctx, "k", 500*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("the next waiter: %v, want a timeout (the forgotten node is still first)", err)
	}
}
