package runner

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/backend"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/run/janitor"
)

// network is the run's ensemble as its backend opened it (made, not
// started) and the network the run's own processes join: the netns slot
// it claimed, which the janitor is told of. It owns both until close; the
// services start the ensemble, the fleet and the register place their
// processes on the network.
type network struct {
	ens  *backend.Ensemble
	net  *netns.Network  // ens.Net: nil on loopback
	zk   cluster.Cluster // ens.Cluster
	mode string          // netns or loopback
}

// slotTeller is the janitor as the network sees it: told the slot, so a
// controller that dies leaves nothing of the network behind.
type slotTeller interface {
	Tell(janitor.Message) error
	Owners() proc.Owners
}

// openNetwork opens the run's ensemble and network through the backend
// cfg names, in the run folder run. On an error the network returned
// still holds whatever was made, for close.
func openNetwork(ctx context.Context, cfg Config, run *store.Run, runID string, env []string, jan slotTeller, log *slog.Logger) (*network, error) {
	n := &network{mode: cfg.NetMode()}
	if cfg.Net == "auto" && n.mode == "loopback" {
		log.Warn("no network namespaces: every process on 127.0.0.1, partition faults unavailable", "why", netns.Available())
	}
	ens, err := backend.Open(ctx, cfg.Cluster, backend.Options{
		Service: cfg.service(), Nodes: cfg.Nodes, Dir: run.Path(store.ZKDir), TickTime: cfg.TickTime,
		MaxSessionTimeout: 2 * cfg.SessionTimeout, NetMode: n.mode, RunID: runID,
		Owners: jan.Owners(), Image: cfg.Image, Env: env, ZK: cfg.ZK, SSH: cfg.SSHFlags(), Logger: log,
	})
	n.ens, n.net, n.zk = ens, ens.Net, ens.Cluster
	if err != nil {
		return n, err
	}
	if n.net != nil {
		if err := jan.Tell(janitor.Message{Slot: &n.net.Slot}); err != nil {
			return n, err
		}
	}
	return n, nil
}

// nodes is how many servers the ensemble has: as many as cfg says for an
// ensemble the run makes, as many as addresses or hosts were given for
// the user's own (external) or an ssh ensemble.
func (n *network) nodes(cfg Config) int {
	if cfg.ZK != "" || cfg.Hosts != "" {
		return len(n.zk.Nodes())
	}
	return cfg.Nodes
}

// close stops the ensemble and removes the network, in the backend's
// order.
func (n *network) close(ctx context.Context) error {
	if n == nil || n.ens == nil {
		return nil
	}
	return n.ens.Close(ctx)
}

// Network modes of Config.Net.
var netModes = []string{"auto", "netns", "loopback"}

// validateNetwork checks the network's and the backend's part of cfg:
// the network mode, the backend and what it needs (addresses, hosts, an
// image). capsKnown says whether what the run can do is known (the mode
// and the backend are valid), which the faults' validation needs.
func validateNetwork(c Config) (errs []error, capsKnown bool) {
	netOK := slices.Contains(netModes, c.Net)
	clusterErr := backend.Validate(c.Cluster, c.NetMode())
	if netOK && clusterErr != nil {
		errs = append(errs, setting.Err("Cluster", "", clusterErr))
	}
	if err := backend.CheckZK(c.Cluster, c.ZK); err != nil {
		errs = append(errs, err)
	}
	if err := backend.CheckHosts(c.Cluster, c.SSHFlags()); err != nil {
		errs = append(errs, err)
	}
	if err := backend.CheckImage(c.Cluster, c.Image); err != nil {
		errs = append(errs, err)
	}
	switch {
	case !netOK:
		errs = append(errs, setting.Errorf("Net", fmt.Sprintf("%q", c.Net), "must be auto, netns or loopback"))
	case c.Net == "netns":
		if err := netns.Available(); err != nil {
			errs = append(errs, setting.Err("Net", "netns", err))
		}
	}
	return errs, netOK && clusterErr == nil
}
