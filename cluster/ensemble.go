package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// The parts of Cluster that are the same whatever runs the servers: each
// backend's Cluster methods call these with its nodes, so the backends
// differ only in how a server's process is reached.

// JoinAddrs is the connect string of nodes: their client addresses,
// comma-separated.
func JoinAddrs(nodes []Node) string {
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.ClientAddr()
	}
	return strings.Join(addrs, ",")
}

// StartAll starts every node in order.
func StartAll(ctx context.Context, nodes []Node) error {
	for _, n := range nodes {
		if _, err := n.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Ready reports whether sts show one leader and every other server a
// follower (one server: standalone).
func Ready(sts []NodeStatus) bool {
	leaders, followers := 0, 0
	for _, s := range sts {
		if s.Err != nil || !s.Status.Serving {
			continue
		}
		switch s.Status.Mode {
		case "leader", "standalone":
			leaders++
		case "follower":
			followers++
		}
	}
	return leaders == 1 && followers == len(sts)-1
}

// WaitReady polls srvr on every server of c until Ready or ctx ends,
// logging each change of the servers' states. On ctx's end the error
// gives each server's last answer and says which servers' processes do
// not run, as their backend sees it.
func WaitReady(ctx context.Context, c Cluster, log *slog.Logger) error {
	return WaitReadyFor(ctx, c, "zk", Ready, log)
}

// WaitReadyFor is WaitReady for any service: name names it in logs and
// errors ("zk", "redis", "etcd") and ready judges its servers' statuses.
func WaitReadyFor(ctx context.Context, c Cluster, name string, ready func([]NodeStatus) bool, log *slog.Logger) error {
	start := time.Now()
	last := ""
	for {
		sts := Statuses(ctx, c, time.Second)
		summary := Summary(sts)
		if ready(sts) {
			log.Info(name+" ensemble ready", "elapsed", time.Since(start).Round(time.Millisecond), "status", summary)
			return nil
		}
		if summary != last {
			log.Info("waiting for "+name+" ensemble", "elapsed", time.Since(start).Round(time.Millisecond), "status", summary)
			last = summary
		}
		select {
		case <-ctx.Done():
			// ctx is over, and the backend's view is worth a short look.
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			return fmt.Errorf("%s ensemble not ready after %s: %s%s: %w", name,
				time.Since(start).Round(time.Millisecond), summary, notRunning(pctx, c.Nodes()), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func notRunning(ctx context.Context, nodes []Node) string {
	var out []string
	for _, n := range nodes {
		if p, err := n.Process(ctx); err == nil && !p.Running {
			out = append(out, fmt.Sprintf("n%d not running", n.ID()))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, ", ")
}

// RestoreAll undoes whatever faults are left on nodes, whoever made them:
// it heals every server's partitions, resumes stopped servers and starts
// dead ones with their data. It does not wait for the ensemble to serve
// (WaitReady does), and returns one line per thing it had to do, with what
// the backend verified, so that a fault the nemesis failed to undo still
// shows in the record. A server's failure does not stop the others'.
func RestoreAll(ctx context.Context, nodes []Node) ([]string, error) {
	var did []string
	var errs []error
	for _, n := range nodes {
		d, err := restoreOne(ctx, n)
		did = append(did, d...)
		if err != nil {
			errs = append(errs, fmt.Errorf("restore n%d: %w", n.ID(), err))
		}
	}
	return did, errors.Join(errs...)
}

func restoreOne(ctx context.Context, n Node) ([]string, error) {
	p, err := n.Process(ctx)
	if err != nil {
		return nil, err
	}
	if !p.Running {
		v, err := n.Start(ctx)
		if err != nil {
			return nil, err
		}
		return []string{fmt.Sprintf("n%d: restarted (%s)", n.ID(), v)}, nil
	}
	var did []string
	var errs []error
	if rules, err := n.Rules(ctx); err != nil {
		errs = append(errs, err)
	} else if len(rules) > 0 {
		if v, err := n.Heal(ctx); err != nil {
			errs = append(errs, err)
		} else {
			did = append(did, fmt.Sprintf("n%d: removed %d rules (%s; %s)", n.ID(), len(rules), strings.Join(rules, "; "), v))
		}
	}
	if p.Stopped {
		if v, err := n.Resume(ctx); err != nil {
			errs = append(errs, err)
		} else {
			did = append(did, fmt.Sprintf("n%d: resumed %s (%s)", n.ID(), p.Instance, v))
		}
	}
	return did, errors.Join(errs...)
}
