package netns

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRulesOfAHostBeingRemoved: a worker's namespace is removed as its
// process exits, concurrently with the final sweep over the hosts, and
// the removal first kills whatever runs in the namespace, the sweep's own
// look at the rules included. Such a host has no rules, which is not an
// error (a run whose final restore tripped on it was recorded as not
// healed). A blocking iptables stand-in first on PATH holds the look
// inside the namespace until the removal kills it.
func TestRulesOfAHostBeingRemoved(t *testing.T) {
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := newNetwork(t)
	h, err := n.AddHost(ctx, "going")
	if err != nil {
		t.Fatal(err)
	}
	shim := t.TempDir()
	if err := os.WriteFile(filepath.Join(shim, "iptables"), []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shim+string(os.PathListSeparator)+os.Getenv("PATH"))

	type result struct {
		rules []string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		r, err := h.Rules(ctx)
		done <- result{r, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		out, _ := run(ctx, "ip", "netns", "pids", h.NS)
		if strings.TrimSpace(out) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the rules check never started in the namespace")
		}
	}
	if err := n.RemoveHost(ctx, h); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.rules) != 0 {
		t.Errorf("Rules of a host removed meanwhile: %q, %v; want none and no error", r.rules, r.err)
	}
	if err := h.Heal(ctx); err != nil {
		t.Errorf("Heal of a removed host: %v", err)
	}
}
