package backend

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/external"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// External is an ensemble the user already runs (--zk), reached as a
// client only: no server fault, the run's znodes under a subtree of its
// own.
const External = external.Name

type externalBackend struct{}

func init() { Register(externalBackend{}, 2) }

func (externalBackend) Name() string                           { return External }
func (externalBackend) Validate(string) error                  { return nil }
func (externalBackend) OnThisMachine() bool                    { return false }
func (externalBackend) Capabilities(bool) cluster.Capabilities { return external.Capabilities() }
func (externalBackend) RunRoot(runID string) string            { return external.RunRoot(runID) }

// RunsService: the user's ensemble is a ZooKeeper one.
func (externalBackend) RunsService(service string) bool { return service == ZooKeeper }

// CheckZK requires --zk, every address host:port.
func (externalBackend) CheckZK(zk string) error {
	if strings.TrimSpace(zk) == "" {
		return fmt.Errorf("%s %s needs %s host:port,... (the client addresses of the ensemble to test)", setting.Name("Cluster"), External, setting.Name("ZK"))
	}
	if _, err := external.ParseAddrs(zk); err != nil {
		return setting.Err("ZK", "", err)
	}
	return nil
}

// Reach probes the user's ensemble and refuses a session timeout it
// would not grant as asked: pauses are timed against the session, and one
// the servers lengthened would expire nobody.
func (externalBackend) Reach(ctx context.Context, zk string, session time.Duration, _ SSHFlags) error {
	addrs, err := external.ParseAddrs(zk)
	if err != nil {
		return setting.Err("ZK", "", err)
	}
	if err := external.Probe(ctx, addrs); err != nil {
		return setting.Err("Cluster", External, fmt.Errorf("unreachable: %w", err))
	}
	granted, err := external.GrantedTimeout(ctx, addrs, session)
	if err != nil {
		return setting.Err("Cluster", External, err)
	}
	if granted.Milliseconds() != session.Milliseconds() {
		return setting.Errorf("SessionTimeout", session.String(), "the ensemble at %s grants %s instead (its minSessionTimeout..maxSessionTimeout): "+
			"pauses and expiries would be timed against a session it does not give; use %s %s",
			zk, granted, setting.Name("SessionTimeout"), granted)
	}
	return nil
}

// Open claims a netns slot (netns mode) for the run's own processes and
// puts a relay per server on its gateway (see cluster/relay); in loopback
// mode the processes dial the user's addresses themselves.
func (externalBackend) Open(ctx context.Context, e *Ensemble, o Options) error {
	addrs, err := external.ParseAddrs(o.ZK)
	if err != nil {
		return setting.Err("ZK", "", err)
	}
	relay, err := relayNet(ctx, e, o)
	if err != nil {
		return err
	}
	c, err := external.New(external.Config{Addrs: addrs, RelayHost: relay, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("prepare ensemble: %w", err)
	}
	e.Cluster = c
	return nil
}

// RemoveRunRoot removes a run's subtree (RunRoot) from the ensemble at
// connect as auth, and says how many znodes went.
func RemoveRunRoot(ctx context.Context, connect, root string, auth recipes.Auth) (int, error) {
	return external.RemoveTree(ctx, connect, root, auth)
}
