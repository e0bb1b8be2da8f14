// Package workerproc is one worker OS process on the controller's
// machine, optionally in a network namespace of its own: the handle
// through which client-side faults pause, resume, cut off and heal a
// worker. Each of those is verified here, from the kernel's side (the
// process state in /proc, the iptables rules of the namespace), and
// returned in words for the history, so the nemesis records what was
// verified without reading process or network state itself.
//
// Errors the caller must tell apart are sentinels: an operation on a
// worker that no longer exists (its process exited, its namespace went
// with it) wraps os.ErrProcessDone; cutting off a worker that shares the
// controller's network wraps errors.ErrUnsupported.
package workerproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

// verifyTimeout bounds the wait for the kernel to show a signal's effect.
const verifyTimeout = 2 * time.Second

// healAttempts bounds the flush retries of a heal; healRetry spaces them.
const (
	healAttempts = 5
	healRetry    = 200 * time.Millisecond
)

// Proc is one worker process. It is safe for concurrent use: it holds no
// state that changes after New.
type Proc struct {
	pid  int
	host *netns.Host // nil: the worker shares the controller's network
	// created is the process's start time (ms since the epoch) read by
	// New, while the process was known to be the worker; createErr is why
	// it could not be read. A PID whose start time differs later is a
	// stranger that was given the number after the worker exited, and is
	// never signalled.
	created   int64
	createErr error
}

// New is the handle of the worker process pid, started by the caller
// just now (so pid is still the worker's), in host's namespace or, with
// host nil, in the controller's network.
func New(pid int, host *netns.Host) *Proc {
	p := &Proc{pid: pid, host: host}
	gp, err := process.NewProcess(int32(pid))
	if err == nil {
		p.created, err = gp.CreateTime()
	}
	if err != nil {
		p.createErr = fmt.Errorf("start time of pid %d at spawn: %w", pid, err)
	}
	return p
}

// PID is the process id, an identifier for the history.
func (p *Proc) PID() int { return p.pid }

// Name names the worker for the history: its PID, and its namespace if
// it has one.
func (p *Proc) Name() string {
	if p.host == nil {
		return fmt.Sprintf("pid %d", p.pid)
	}
	return fmt.Sprintf("pid %d in namespace %s", p.pid, p.host.NS)
}

// ours returns the process if its PID still names the worker (same start
// time as at New), and an error wrapping os.ErrProcessDone if the worker
// is gone.
func (p *Proc) ours(ctx context.Context) (*process.Process, error) {
	if p.createErr != nil {
		return nil, fmt.Errorf("%w (%w)", p.createErr, os.ErrProcessDone)
	}
	gp, err := process.NewProcessWithContext(ctx, int32(p.pid))
	if errors.Is(err, process.ErrorProcessNotRunning) {
		return nil, fmt.Errorf("pid %d exited: %w", p.pid, os.ErrProcessDone)
	}
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", p.pid, err)
	}
	ct, err := gp.CreateTimeWithContext(ctx)
	if err != nil {
		// Vanished between the two reads.
		return nil, fmt.Errorf("start time of pid %d: %v: %w", p.pid, err, os.ErrProcessDone)
	}
	if ct != p.created {
		return nil, fmt.Errorf("pid %d now names another process (started at %d ms, the worker at %d ms): %w",
			p.pid, ct, p.created, os.ErrProcessDone)
	}
	return gp, nil
}

// processDone reports whether err of a signal says the process is gone.
func processDone(err error) bool {
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, process.ErrorProcessNotRunning) || errors.Is(err, syscall.ESRCH)
}

// Pause SIGSTOPs the worker and verifies it stopped, in two kernel views:
// /proc/PID/status through gopsutil, then the state letter of
// /proc/PID/stat. A worker that is gone (or whose PID now names another
// process) is not signalled: the error wraps os.ErrProcessDone.
func (p *Proc) Pause(ctx context.Context) (string, error) {
	gp, err := p.ours(ctx)
	if err != nil {
		return "", err
	}
	start := time.Now()
	if err := gp.SuspendWithContext(ctx); err != nil {
		if processDone(err) {
			return "", fmt.Errorf("pid %d exited before the pause: %w", p.pid, os.ErrProcessDone)
		}
		return "", fmt.Errorf("SIGSTOP pid %d: %w", p.pid, err)
	}
	if err := waitStatus(ctx, gp, true); err != nil {
		return "", err
	}
	took := time.Since(start)
	st, err := proc.State(p.pid)
	if err != nil {
		return "", fmt.Errorf("after SIGSTOP: %w", err)
	}
	if st != 'T' && st != 't' {
		return "", fmt.Errorf("pid %d: /proc/%d/status shows stopped but /proc/%d/stat state is %c", p.pid, p.pid, p.pid, st)
	}
	return fmt.Sprintf("SIGSTOP; /proc/%d/status shows stopped after %s (gopsutil), /proc/%d/stat state %c; start time %d ms unchanged since spawn",
		p.pid, took.Round(time.Microsecond), p.pid, st, p.created), nil
}

// Resume SIGCONTs the worker and verifies it no longer shows stopped. A
// worker that is gone is left alone and the result says so: nothing of
// it is left paused, which is what a resume must achieve.
func (p *Proc) Resume(ctx context.Context) (string, error) {
	gp, err := p.ours(ctx)
	if errors.Is(err, os.ErrProcessDone) {
		return fmt.Sprintf("process gone (%v): nothing left paused", err), nil
	}
	if err != nil {
		return "", err
	}
	start := time.Now()
	if err := gp.ResumeWithContext(ctx); err != nil {
		if processDone(err) {
			return "process gone: nothing left paused", nil
		}
		return "", fmt.Errorf("SIGCONT pid %d: %w", p.pid, err)
	}
	if err := waitStatus(ctx, gp, false); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return fmt.Sprintf("SIGCONT; %v: nothing left paused", err), nil
		}
		return "", err
	}
	return fmt.Sprintf("SIGCONT; /proc/%d/status no longer stopped after %s (gopsutil)", p.pid, time.Since(start).Round(time.Microsecond)), nil
}

// waitStatus polls the process state until it is (or is no longer)
// stopped, for up to verifyTimeout or until ctx ends. A process that
// exits meanwhile (vanished, or a zombie) yields an error wrapping
// os.ErrProcessDone.
func waitStatus(ctx context.Context, p *process.Process, stopped bool) error {
	deadline := time.Now().Add(verifyTimeout)
	for {
		st, err := p.StatusWithContext(ctx)
		if err != nil {
			if _, serr := os.Stat(fmt.Sprintf("/proc/%d", p.Pid)); errors.Is(serr, os.ErrNotExist) {
				return fmt.Errorf("pid %d exited while waiting for stopped=%v: %w", p.Pid, stopped, os.ErrProcessDone)
			}
			return fmt.Errorf("state of pid %d: %w", p.Pid, err)
		}
		if slices.Contains(st, process.Zombie) {
			return fmt.Errorf("pid %d exited (zombie) while waiting for stopped=%v: %w", p.Pid, stopped, os.ErrProcessDone)
		}
		if slices.Contains(st, process.Stop) == stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d: state %v, want stopped=%v after %s", p.Pid, st, stopped, verifyTimeout)
		}
		if !ctxsleep.Sleep(ctx, 2*time.Millisecond) {
			return fmt.Errorf("pid %d: state %v, want stopped=%v: %w", p.Pid, st, stopped, context.Cause(ctx))
		}
	}
}

// Isolate drops all traffic between the worker's namespace and peers
// (IPs), both directions, and verifies a DROP rule for every peer is in
// place. Some rules may be in even when it fails: Heal removes them. A
// worker without a namespace of its own cannot be cut off alone (the
// error wraps errors.ErrUnsupported); one whose namespace is gone wraps
// os.ErrProcessDone.
func (p *Proc) Isolate(ctx context.Context, peers ...string) (string, error) {
	if p.host == nil {
		return "", fmt.Errorf("%s has no network namespace of its own (loopback mode): %w", p.Name(), errors.ErrUnsupported)
	}
	start := time.Now()
	if err := p.host.Block(ctx, peers...); err != nil {
		if p.host.Gone() {
			return "", fmt.Errorf("namespace %s gone with its worker: %w", p.host.NS, os.ErrProcessDone)
		}
		return "", fmt.Errorf("isolate %s: %w", p.host.NS, err)
	}
	blocked := time.Since(start)
	rules, err := p.host.Rules(ctx)
	if err != nil {
		return "", fmt.Errorf("list rules of %s: %w", p.host.NS, err)
	}
	verified := fmt.Sprintf("DROP both directions to %s in namespace %s (%s): %s",
		strings.Join(peers, ", "), p.host.NS, blocked.Round(time.Millisecond), strings.Join(rules, "; "))
	for _, ip := range peers {
		if !hasDrop(rules, ip) {
			return verified, fmt.Errorf("namespace %s shows no DROP rule for %s", p.host.NS, ip)
		}
	}
	return verified, nil
}

// hasDrop reports whether rules drop traffic from or to ip.
func hasDrop(rules []string, ip string) bool {
	for _, r := range rules {
		if strings.Contains(r, ip+"/32") && strings.Contains(r, "DROP") {
			return true
		}
	}
	return false
}

// Heal removes every block of the worker's namespace and verifies none is
// left. A namespace already removed (its worker exited) has no rules
// either, and the result says so; iptables failing in a namespace that
// still exists is an error, never taken for "gone". A worker without a
// namespace has nothing to heal.
func (p *Proc) Heal(ctx context.Context) (string, error) {
	if p.host == nil {
		return fmt.Sprintf("%s has no namespace of its own: no rules to remove", p.Name()), nil
	}
	ns := p.host.NS
	gone := fmt.Sprintf("namespace %s gone with its worker: no rules left", ns)
	start := time.Now()
	// The worker may exit while we heal (a retired worker finishes), and
	// removing its namespace SIGKILLs whatever runs in it, our iptables
	// included: retry until the flush works or the namespace is gone.
	var herr error
	for attempt := 0; attempt < healAttempts; attempt++ {
		if attempt > 0 && !ctxsleep.Sleep(ctx, healRetry) {
			break
		}
		if herr = p.host.Heal(ctx); herr == nil {
			break
		}
		if p.host.Gone() {
			return gone, nil
		}
	}
	if herr != nil {
		return "", fmt.Errorf("heal %s: %w", ns, herr)
	}
	// Rules waits for a removal under way and then finds the namespace
	// gone; only then is an empty list not the kernel's word.
	rules, err := p.host.Rules(ctx)
	if p.host.Gone() {
		return gone, nil
	}
	if err != nil {
		return "", fmt.Errorf("list rules of %s after the heal: %w", ns, err)
	}
	if len(rules) > 0 {
		return "", fmt.Errorf("namespace %s still has rules after heal: %s", ns, strings.Join(rules, "; "))
	}
	return fmt.Sprintf("flushed chain in namespace %s, no rule left (%s)", ns, time.Since(start).Round(time.Millisecond)), nil
}
