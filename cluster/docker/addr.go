package docker

import (
	"fmt"
	"net/netip"

	"github.com/zkchaos/zkchaos/host/netns"
)

// The harness's test traffic stays in 198.18.0.0/15 (RFC 2544's benchmark
// range, which collides with nothing real). netns owns the address plan:
// 64 /21 slots, slot s at 198.18.0.0 + s·2048; namespaces take slots
// 0..netns.MaxSlots-1 and Docker networks of the harness the top
// netns.DockerSlots, never Docker's default 172.x pools, so the two kinds
// of network never share addresses.
const (
	// FirstNetnsReservedSlot is the first slot Docker networks use.
	FirstNetnsReservedSlot = netns.MaxSlots
	// Subnets is how many Docker networks can exist at once.
	Subnets = netns.DockerSlots
)

// Reserved is the part of 198.18.0.0/15 kept for Docker networks: the
// slots FirstNetnsReservedSlot..63, a /18.
var Reserved = netip.PrefixFrom(netns.SlotPrefix(FirstNetnsReservedSlot).Addr(), 18)

// Subnet is the i-th /21 of Reserved (0 ≤ i < Subnets), one Docker
// network's. In it:
//   - .1 is the gateway, the bridge's own address, from which the
//     controller reaches the servers (as the netns bridge's first address);
//   - server n gets base+1+n, as netns host k gets base+1+k;
//   - containerRange (the first /25) is where the engine may place
//     containers; the rest (.128 to the end) is left for hosts the
//     controller attaches to the bridge itself (workers, the register).
func Subnet(i int) (netip.Prefix, error) {
	if i < 0 || i >= Subnets {
		return netip.Prefix{}, fmt.Errorf("docker subnet %d out of 0..%d", i, Subnets-1)
	}
	return netip.PrefixFrom(offset(Reserved.Addr(), uint32(i)*2048), 21), nil
}

// FirstHost is the first host number k (address base+1+k, as netns
// numbers hosts) outside containerRange: where the run's own namespaces
// attached to the bridge start, at .128.
const FirstHost = 127

// maxServers is how many servers fit in containerRange after the gateway.
const maxServers = 125

func gateway(p netip.Prefix) netip.Addr { return offset(p.Addr(), 1) }

func serverAddr(p netip.Prefix, id int) netip.Addr { return offset(p.Addr(), uint32(1+id)) }

func containerRange(p netip.Prefix) netip.Prefix { return netip.PrefixFrom(p.Addr(), 25) }

func offset(a netip.Addr, n uint32) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) + n
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
