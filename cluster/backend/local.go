package backend

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/host/netns"
)

// Local runs each server as a process on this machine, in its own
// network namespace (netns mode) or on 127.0.0.1 (loopback mode).
const Local = "local"

type localBackend struct{}

func init() { Register(localBackend{}, 0) }

func (localBackend) Name() string            { return Local }
func (localBackend) Validate(string) error   { return nil }
func (localBackend) OnThisMachine() bool     { return true }
func (localBackend) RunsService(string) bool { return true }
func (localBackend) resumes()                {}
func (localBackend) hostsPostgres()          {}
func (localBackend) Capabilities(netns bool) cluster.Capabilities {
	return local.Capabilities(netns)
}

// checkServers: the program of the service (ZooKeeper's java and jars by
// default) must be installed here.
func (localBackend) checkServers(service string) error { return program(service).Check() }

// Open claims a netns slot (netns mode) and puts one namespace per
// server on it.
func (localBackend) Open(ctx context.Context, e *Ensemble, o Options) error {
	if o.NetMode == "netns" {
		n, err := netns.Create(ctx, o.RunID, o.Owners, o.Logger)
		if err != nil {
			return fmt.Errorf("create run network: %w", err)
		}
		e.Net = n
	}
	c, err := local.New(ctx, local.Config{Nodes: o.Nodes, Dir: o.Dir, TickTime: o.TickTime,
		MaxSessionTimeout: o.MaxSessionTimeout, Network: e.Net, Env: o.Env, Program: program(o.Service), Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("prepare ensemble: %w", err)
	}
	e.Cluster = c
	return nil
}
