package backend

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	zkssh "github.com/zkchaos/zkchaos/cluster/ssh"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// SSH runs each server on a remote host of --hosts, driven over SSH;
// every fault is healed by its host when the controller's lease runs
// out.
const SSH = zkssh.Name

type sshBackend struct{}

func init() { Register(sshBackend{}, 3) }

func (sshBackend) Name() string                           { return SSH }
func (sshBackend) Validate(string) error                  { return nil }
func (sshBackend) OnThisMachine() bool                    { return false }
func (sshBackend) Capabilities(bool) cluster.Capabilities { return zkssh.Capabilities() }

// RunsService: the hosts get ZooKeeper's Debian packages.
func (sshBackend) RunsService(service string) bool { return service == ZooKeeper }

// HostCount is one server per host of hosts (0 when they do not parse).
func (sshBackend) HostCount(hosts string) int {
	hs, err := zkssh.ParseHosts(hosts)
	if err != nil {
		return 0
	}
	return len(hs)
}

// CheckHosts requires --hosts (each a host name or address, none twice)
// and checks the login's port and files.
func (sshBackend) CheckHosts(f SSHFlags) error {
	if strings.TrimSpace(f.Hosts) == "" {
		return fmt.Errorf("%s %s needs %s host1,host2,... (one ZooKeeper server per host)", setting.Name("Cluster"), SSH, setting.Name("Hosts"))
	}
	if _, err := zkssh.ParseHosts(f.Hosts); err != nil {
		return setting.Err("Hosts", "", err)
	}
	if f.Auth.Port < 0 || f.Auth.Port > 65535 {
		return setting.Errorf("SSHPort", fmt.Sprint(f.Auth.Port), "not 1..65535")
	}
	for _, ff := range []struct{ field, file string }{{"SSHKey", f.Auth.KeyFile}, {"SSHKnownHosts", f.Auth.KnownHosts}} {
		if ff.file == "" {
			continue
		}
		if _, err := os.Stat(ff.file); err != nil {
			return setting.Err(ff.field, "", err)
		}
	}
	return nil
}

// Reach checks that every host takes the connection, lets the user run
// iptables as root and has what a server needs (installing it with
// --install).
func (sshBackend) Reach(ctx context.Context, _ string, _ time.Duration, sf SSHFlags) error {
	hosts, err := zkssh.ParseHosts(sf.Hosts)
	if err != nil {
		return setting.Err("Hosts", "", err)
	}
	return zkssh.Reach(ctx, hosts, sf.Auth, sf.Install)
}

// Open claims a netns slot (netns mode) for the run's own processes, then
// prepares a server on every host (cluster/ssh), with a relay per server
// on the slot's gateway as for an external ensemble.
func (sshBackend) Open(ctx context.Context, e *Ensemble, o Options) error {
	hosts, err := zkssh.ParseHosts(o.SSH.Hosts)
	if err != nil {
		return setting.Err("Hosts", "", err)
	}
	relay, err := relayNet(ctx, e, o)
	if err != nil {
		return err
	}
	c, err := zkssh.New(ctx, zkssh.Config{Hosts: hosts, Auth: o.SSH.Auth, RunID: o.RunID, Dir: o.Dir,
		TickTime: o.TickTime, MaxSessionTimeout: o.MaxSessionTimeout, RelayHost: relay, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("prepare ensemble: %w", err)
	}
	e.Cluster = c
	return nil
}
