// Package netns gives each process of a run its own network namespace on a
// per-run bridge, so that partitions can be made with iptables inside a
// namespace without touching the host's own traffic.
//
// Everything is done by shelling out to ip(8) and iptables(8): they are the
// tools an operator uses to inspect and repair what a crashed run left, so
// what this package creates is exactly what they show. Names are derived
// from the slot number alone (bridge zkc<s>, namespaces zkc<s>-<name>,
// veths zk<s>h<k>), which is what lets SweepSlot find everything of a slot
// without any record from the run that made it.
package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// 198.18.0.0/15 holds 64 /21 slots (SlotPrefix). Network namespaces of
// the local backend take slots 0..MaxSlots-1; the top DockerSlots are
// kept for the Docker backend's networks (cluster/docker), so the two
// kinds of network never share addresses and neither ever takes an
// address from Docker's default pools.
const (
	MaxSlots    = 56
	DockerSlots = 8
)

// StateDir holds one slot-<s>.json per slot in use, and the lock that
// serialises edits of the shared ZKCHAOS-FWD chain.
const StateDir = "/run/zkchaos"

// Available reports why namespaces cannot be used here (nil when they can),
// so the controller can fall back to loopback mode with a reason.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root (euid is not 0)")
	}
	for _, t := range []struct{ tool, pkg string }{{"ip", "iproute2"}, {"iptables", "iptables"}} {
		if _, err := exec.LookPath(t.tool); err != nil {
			return fmt.Errorf("network namespaces need %s (install Debian's %s: scripts/install-deps.sh run): %w", t.tool, t.pkg, err)
		}
	}
	return nil
}

// CmdError is a failed ip/iptables command with what it printed, because
// the exit status alone says nothing about why.
type CmdError struct {
	Cmd    string
	Stderr string
	Err    error
}

func (e *CmdError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("%s: %v", e.Cmd, e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", e.Cmd, e.Err, e.Stderr)
}

func (e *CmdError) Unwrap() error { return e.Err }

// run runs a command and returns its stdout.
func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &CmdError{
			Cmd:    name + " " + strings.Join(args, " "),
			Stderr: cleanStderr(stderr.String()),
			Err:    err,
		}
	}
	return stdout.String(), nil
}

// cleanStderr drops the iptables-nft warning about legacy tables, which is
// printed on every call on hosts where Docker uses iptables-legacy and
// would otherwise hide the real message.
func cleanStderr(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "# Warning: iptables-legacy tables present") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "; ")
}

// stderrHas reports whether err is a command failure whose stderr contains
// any of the given fragments; used to treat "already exists" and "not
// found" as success where idempotency needs it.
func stderrHas(err error, frags ...string) bool {
	var ce *CmdError
	if !errors.As(err, &ce) {
		return false
	}
	for _, f := range frags {
		if strings.Contains(ce.Stderr, f) {
			return true
		}
	}
	return false
}

// ipt runs iptables in the root namespace, waiting for the xtables lock so
// that concurrent runs do not fail spuriously.
func ipt(ctx context.Context, args ...string) (string, error) {
	return run(ctx, "iptables", append(lockWait(ctx), args...)...)
}

// maxLockWait bounds iptables' wait for the xtables lock when ctx has no
// deadline.
const maxLockWait = 10 * time.Second

// lockWait is iptables' -w argument: wait for the xtables lock
// (iptables-legacy takes it on every call; iptables-nft ignores it), but
// never past ctx's deadline, and at most maxLockWait. A bare -w waits
// forever behind a stuck holder of the lock, and a heal that waits
// forever hangs the run; the command also runs under ctx, which kills it
// at the deadline.
func lockWait(ctx context.Context) []string {
	d := maxLockWait
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	return []string{"-w", strconv.Itoa(max(1, int(d/time.Second)))}
}
