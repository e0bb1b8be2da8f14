package docker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Network is a run's Docker network: a bridge in the root namespace with
// the gateway address, the servers' containers on it.
type Network struct {
	ID, Name string
	// Bridge is the bridge interface's name, zkd<i>, for whoever attaches
	// hosts of its own (worker namespaces) to the same network.
	Bridge string
	// Slot is the netns slot the subnet is (FirstNetnsReservedSlot+i),
	// which the run's own hosts claim to attach to the bridge.
	Slot    int
	Subnet  netip.Prefix
	Gateway netip.Addr
}

// createNetwork takes the first free subnet of Reserved. The engine
// refuses a subnet that overlaps one of its networks, which makes taking
// one atomic between runs; a subnet some interface of this machine already
// uses (a netns bridge) is skipped before asking.
func createNetwork(ctx context.Context, cli *testcontainers.DockerClient, name string, labels map[string]string) (*Network, error) {
	used, err := hostPrefixes()
	if err != nil {
		return nil, err
	}
	var skipped []string
	for i := range Subnets {
		p, _ := Subnet(i)
		if overlapsAny(p, used) {
			skipped = append(skipped, p.String()+" (on an interface here)")
			continue
		}
		n := &Network{Name: name, Bridge: fmt.Sprintf("zkd%d", i), Slot: FirstNetnsReservedSlot + i, Subnet: p, Gateway: gateway(p)}
		res, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
			Driver: "bridge",
			// Internal: no route off the machine and no masquerading, so
			// nothing in a container can send traffic anywhere but the
			// network itself and the controller on the bridge.
			Internal: true,
			IPAM: &network.IPAM{Config: []network.IPAMConfig{{
				Subnet: p, IPRange: containerRange(p), Gateway: n.Gateway,
			}}},
			Options: map[string]string{"com.docker.network.bridge.name": n.Bridge},
			Labels:  labels,
		})
		if err != nil {
			if taken(err) {
				skipped = append(skipped, p.String()+" (taken)")
				continue
			}
			return nil, fmt.Errorf("create docker network %s on %s: %w", name, p, err)
		}
		n.ID = res.ID
		return n, nil
	}
	return nil, fmt.Errorf("create docker network %s: no free subnet in %s (run chaos cleanup?): %s", name, Reserved, strings.Join(skipped, ", "))
}

// taken is the engine's answer for a subnet or bridge name in use.
func taken(err error) bool {
	s := err.Error()
	return strings.Contains(s, "overlap") || strings.Contains(s, "bridge name") || strings.Contains(s, "already exists: zkd")
}

func hostPrefixes() ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list interface addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func overlapsAny(p netip.Prefix, ps []netip.Prefix) bool {
	for _, q := range ps {
		if p.Overlaps(q) {
			return true
		}
	}
	return false
}
