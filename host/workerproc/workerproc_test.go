package workerproc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
)

// startSleep starts `sleep 30` as a stand-in worker; the cleanup kills
// and reaps it unless the test did.
func startSleep(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestPauseResume(t *testing.T) {
	ctx := context.Background()
	cmd := startSleep(t, exec.Command("sleep", "30"))
	pid := cmd.Process.Pid
	p := New(pid, nil)
	if got, want := p.Name(), fmt.Sprintf("pid %d", pid); got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}

	verified, err := p.Pause(ctx)
	if err != nil {
		t.Fatalf("Pause: %v", err)
	}
	t.Logf("pause: %s", verified)
	if !proc.Stopped(pid) {
		t.Fatalf("Pause said %q but pid %d is not stopped", verified, pid)
	}
	for _, w := range []string{fmt.Sprintf("/proc/%d/status shows stopped", pid), "stat state T", "unchanged since spawn"} {
		if !strings.Contains(verified, w) {
			t.Errorf("pause verified %q lacks %q", verified, w)
		}
	}

	verified, err = p.Resume(ctx)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	t.Logf("resume: %s", verified)
	if proc.Stopped(pid) || !proc.Alive(pid) {
		t.Fatalf("Resume said %q but pid %d is stopped or dead", verified, pid)
	}
	if !strings.Contains(verified, "no longer stopped") {
		t.Errorf("resume verified %q lacks %q", verified, "no longer stopped")
	}
}

// TestGone: a worker that exited is not paused (os.ErrProcessDone), and
// its resume succeeds saying it is gone, whether it was reaped or is a
// zombie still.
func TestGone(t *testing.T) {
	ctx := context.Background()
	for _, reap := range []bool{true, false} {
		t.Run(fmt.Sprintf("reaped=%v", reap), func(t *testing.T) {
			cmd := startSleep(t, exec.Command("sleep", "30"))
			p := New(cmd.Process.Pid, nil)
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if reap {
				_ = cmd.Wait()
			} else {
				waitUntil(t, func() bool { st, err := proc.State(p.PID()); return err == nil && st == 'Z' })
			}
			if v, err := p.Pause(ctx); !errors.Is(err, os.ErrProcessDone) {
				t.Errorf("Pause of an exited process: %q, %v; want os.ErrProcessDone", v, err)
			}
			v, err := p.Resume(ctx)
			if err != nil || !strings.Contains(v, "nothing left paused") {
				t.Errorf("Resume of an exited process: %q, %v; want it to say nothing is left paused", v, err)
			}
			t.Logf("resume: %s", v)
		})
	}
}

// TestStranger: a PID whose start time is not the worker's (the number
// was given to another process) is never signalled.
func TestStranger(t *testing.T) {
	cmd := startSleep(t, exec.Command("sleep", "30"))
	p := New(cmd.Process.Pid, nil)
	p.created-- // as if the worker had started a moment earlier
	if v, err := p.Pause(context.Background()); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("Pause of a stranger: %q, %v; want os.ErrProcessDone", v, err)
	}
	time.Sleep(20 * time.Millisecond)
	if proc.Stopped(cmd.Process.Pid) {
		t.Fatal("the stranger was stopped")
	}
}

func TestNoNamespace(t *testing.T) {
	ctx := context.Background()
	p := New(os.Getpid(), nil)
	if v, err := p.Isolate(ctx, "127.0.0.2"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Isolate without a namespace: %q, %v; want errors.ErrUnsupported", v, err)
	}
	if v, err := p.Heal(ctx); err != nil {
		t.Errorf("Heal without a namespace: %q, %v; want nothing to do", v, err)
	}
}

func TestHasDrop(t *testing.T) {
	rules := []string{"-A ZKCHAOS -s 10.1.0.2/32 -j DROP", "-A ZKCHAOS -d 10.1.0.2/32 -j DROP"}
	if !hasDrop(rules, "10.1.0.2") {
		t.Error("rule for 10.1.0.2 not found")
	}
	if hasDrop(rules, "10.1.0.22") || hasDrop(rules, "10.1.0.3") {
		t.Error("rule found for an address that has none")
	}
}

// TestIsolateHeal cuts a worker in a real namespace off from a peer, heals
// it, then does both again for a worker whose namespace goes away in
// between, and for one whose iptables fails in a namespace that exists.
func TestIsolateHeal(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skipf("network namespaces unavailable: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := newNetwork(t)
	peer, err := n.AddHost(ctx, "peer")
	if err != nil {
		t.Fatal(err)
	}
	host, err := n.AddHost(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	cmd := startSleep(t, host.Command(ctx, "sleep", "30"))
	p := New(cmd.Process.Pid, host)
	if got, want := p.Name(), fmt.Sprintf("pid %d in namespace %s", cmd.Process.Pid, host.NS); got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}

	verified, err := p.Isolate(ctx, peer.IP)
	if err != nil {
		t.Fatalf("Isolate: %q, %v", verified, err)
	}
	t.Logf("isolate: %s", verified)
	if rules, err := host.Rules(ctx); err != nil || len(rules) != 2 {
		t.Fatalf("rules after Isolate: %q, %v; want 2", rules, err)
	}
	if !strings.Contains(verified, "DROP both directions") || !strings.Contains(verified, peer.IP+"/32") {
		t.Errorf("isolate verified %q does not show the rules", verified)
	}
	verified, err = p.Heal(ctx)
	if err != nil || !strings.Contains(verified, "no rule left") {
		t.Fatalf("Heal: %q, %v", verified, err)
	}
	t.Logf("heal: %s", verified)
	if rules, err := host.Rules(ctx); err != nil || len(rules) != 0 {
		t.Fatalf("rules after Heal: %q, %v; want none", rules, err)
	}

	t.Run("iptables failing", func(t *testing.T) {
		if _, err := p.Isolate(ctx, peer.IP); err != nil {
			t.Fatal(err)
		}
		t.Run("broken iptables", func(t *testing.T) {
			shim := t.TempDir()
			if err := os.WriteFile(filepath.Join(shim, "iptables"), []byte("#!/bin/sh\necho broken >&2\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", shim+string(os.PathListSeparator)+os.Getenv("PATH"))
			if v, err := p.Heal(ctx); err == nil {
				t.Errorf("Heal with iptables failing in a live namespace: %q, no error", v)
			} else {
				t.Logf("heal: %v", err)
			}
		})
		if v, err := p.Heal(ctx); err != nil || !strings.Contains(v, "no rule left") {
			t.Fatalf("Heal once iptables works: %q, %v", v, err)
		}
	})

	t.Run("namespace gone", func(t *testing.T) {
		if _, err := p.Isolate(ctx, peer.IP); err != nil {
			t.Fatal(err)
		}
		if err := n.RemoveHost(ctx, host); err != nil {
			t.Fatal(err)
		}
		v, err := p.Heal(ctx)
		if err != nil || !strings.Contains(v, "gone with its worker") {
			t.Errorf("Heal of a removed namespace: %q, %v; want it gone with its worker", v, err)
		}
		if v, err := p.Isolate(ctx, peer.IP); !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("Isolate of a removed namespace: %q, %v; want os.ErrProcessDone", v, err)
		}
	})
}

func newNetwork(t *testing.T) *netns.Network {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	n, err := netns.Create(ctx, fmt.Sprintf("test-workerproc-%d", os.Getpid()), proc.Self(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := n.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, _, err := netns.SweepSlot(ctx, n.Slot, netns.OwnedBy(n.RunID)); err != nil {
			t.Errorf("sweep: %v", err)
		}
	})
	return n
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
	}
}
