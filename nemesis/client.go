package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

// Client-side faults (pause-worker, isolate-holder, expire-holder) act on
// worker processes rather than servers. They need more than Holders: any
// live worker, its ZooKeeper session and password, and its process. That
// view is an optional interface of Targets, so a backend that cannot give
// it (or a test double) still runs the other faults; those faults then
// fail with ErrNoTarget-like errors instead of guessing.

// Worker is one live (not retired) worker process of the run.
type Worker struct {
	Process int
	PID     int
	// Holding is true while the worker holds Key under Token and its
	// write is still to come or under way (a holder that has written is
	// releasing); InCriticalSection as in Holder.
	Holding           bool
	Key               string
	Token             int64
	InCriticalSection bool
	// CriticalSince is when the controller sent the write whose work is
	// under way (zero when not in the critical section): the worker checks
	// the lock only once the request has reached it.
	CriticalSince time.Time
	// Session is the session id the worker last reported connected (0 if
	// none yet or it is between sessions); Password its password, nil
	// when the worker did not report one.
	Session  int64
	Password []byte
	// Proc is the worker's OS process; nil when the targets cannot act on
	// it.
	Proc WorkerProc
}

// WorkerProc is a worker's OS process as client-side faults act on it.
// Every verb verifies its effect from the kernel's side and returns what
// it verified, in words for the history: the nemesis reads no process or
// network state itself. Errors callers tell apart wrap sentinels: a
// worker that is gone (exited; its namespace removed with it) wraps
// os.ErrProcessDone, a worker that cannot be cut off alone (no network
// namespace of its own) wraps errors.ErrUnsupported.
type WorkerProc interface {
	// Name names the process for the history ("pid 123", "pid 123 in
	// namespace zkc3-w5").
	Name() string
	// Pause SIGSTOPs the process and verifies it stopped.
	Pause(ctx context.Context) (verified string, err error)
	// Resume SIGCONTs the process and verifies it runs; a process that
	// is gone is nothing left paused, which the result says.
	Resume(ctx context.Context) (verified string, err error)
	// Isolate drops traffic between the worker and peers (IPs), both
	// directions, and verifies the rules are in; some may be in even when
	// it fails, which Heal undoes.
	Isolate(ctx context.Context, peers ...string) (verified string, err error)
	// Heal removes every block of the worker and verifies none is left
	// (a namespace gone with its worker has none either).
	Heal(ctx context.Context) (verified string, err error)
}

// Workers is the optional part of Targets that client-side faults need.
type Workers interface {
	Workers() []Worker
	// SessionState is the last state (connected, disconnected, expired)
	// the worker with pid reported for session, "" if none.
	SessionState(pid int, session int64) string
}

// requireNetns marks a fault as needing every worker in its own network
// namespace; a fault's init calls it next to register.
func requireNetns(name string) { requires(name, needWorkerNet) }

// workersOf returns the client-side view of env's targets.
func workersOf(env *Env) (Workers, error) {
	w, ok := env.Targets.(Workers)
	if !ok {
		return nil, fmt.Errorf("%w: the targets do not expose worker processes", cluster.ErrUnsupported)
	}
	return w, nil
}

// pickWorker chooses, with the run's seeded source, among the workers
// that match ok, in process order so a seed repeats its choice.
func pickWorker(env *Env, ws []Worker, ok func(Worker) bool) (Worker, bool) {
	var in []Worker
	for _, w := range ws {
		if ok(w) {
			in = append(in, w)
		}
	}
	if len(in) == 0 {
		return Worker{}, false
	}
	sort.Slice(in, func(i, j int) bool { return in[i].Process < in[j].Process })
	return in[env.Rand.IntN(len(in))], true
}

// waitWorker polls for a worker matching ok, preferring one matching
// prefer for up to preferFor, until ctx ends or within bounds it gives up.
func waitWorker(ctx context.Context, env *Env, ws Workers, within, preferFor time.Duration, prefer, ok func(Worker) bool) (Worker, bool) {
	start := time.Now()
	for {
		all := ws.Workers()
		if time.Since(start) < preferFor {
			if w, found := pickWorker(env, all, func(w Worker) bool { return ok(w) && prefer(w) }); found {
				return w, true
			}
		} else if w, found := pickWorker(env, all, ok); found {
			return w, true
		}
		if time.Since(start) > within || !ctxsleep.Sleep(ctx, 5*time.Millisecond) {
			return Worker{}, false
		}
	}
}

// waitState polls until the worker reports one of states for session, or
// timeout; it returns the state seen and when.
func waitState(ctx context.Context, ws Workers, pid int, session int64, timeout time.Duration, states ...string) (string, time.Duration, bool) {
	start := time.Now()
	for {
		st := ws.SessionState(pid, session)
		for _, s := range states {
			if st == s {
				return st, time.Since(start), true
			}
		}
		if time.Since(start) > timeout || !ctxsleep.Sleep(ctx, 2*time.Millisecond) {
			return st, time.Since(start), false
		}
	}
}

// serverIPs are the distinct IPs of the ensemble's client addresses.
func serverIPs(env *Env) ([]string, error) {
	addrs, err := serverAddrs(env)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var ips []string
	for _, a := range addrs {
		h, _, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("server address %q: %w", a, err)
		}
		if !seen[h] {
			seen[h] = true
			ips = append(ips, h)
		}
	}
	return ips, nil
}

// serverAddrs are the ensemble's client addresses, from the cluster.
func serverAddrs(env *Env) ([]string, error) {
	if env.Cluster == nil {
		return nil, fmt.Errorf("%w: no access to the ensemble's addresses", cluster.ErrUnsupported)
	}
	var out []string
	for _, a := range strings.Split(env.Cluster.ConnectString(), ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty connect string")
	}
	return out, nil
}

// workerGone reports whether err of a WorkerProc says the worker no longer
// exists, so the fault found no target rather than failed.
func workerGone(err error) bool { return errors.Is(err, os.ErrProcessDone) }

func sessionHex(id int64) string { return fmt.Sprintf("0x%x", id) }
