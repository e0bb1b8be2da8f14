package docker

import (
	"net/netip"
	"testing"
)

// The Docker subnets are the netns slots 56..63 of 198.18.0.0/15 (slot s
// at 198.18.0.0 + s·2048, computed here independently), disjoint, and
// every server address lies in the part the engine may hand out.
func TestSubnetsAreTheReservedSlots(t *testing.T) {
	bench := netip.MustParsePrefix("198.18.0.0/15")
	base := netip.MustParseAddr("198.18.0.0")
	for i := range Subnets {
		p, err := Subnet(i)
		if err != nil {
			t.Fatal(err)
		}
		slot := FirstNetnsReservedSlot + i
		want := netip.PrefixFrom(offset(base, uint32(slot)*2048), 21)
		if p != want {
			t.Errorf("Subnet(%d) = %s, want netns slot %d = %s", i, p, slot, want)
		}
		if !Reserved.Contains(p.Addr()) || !bench.Contains(p.Addr()) {
			t.Errorf("Subnet(%d) = %s outside %s or %s", i, p, Reserved, bench)
		}
		for j := range i {
			q, _ := Subnet(j)
			if p.Overlaps(q) {
				t.Errorf("subnets %d and %d overlap: %s %s", i, j, p, q)
			}
		}
		r := containerRange(p)
		if gw := gateway(p); !r.Contains(gw) || gw == serverAddr(p, 1) {
			t.Errorf("gateway %s of %s", gw, p)
		}
		for _, id := range []int{1, maxServers} {
			if a := serverAddr(p, id); !r.Contains(a) {
				t.Errorf("server %d address %s outside the container range %s", id, a, r)
			}
		}
	}
	if last, _ := Subnet(Subnets - 1); last.Addr() != netip.MustParseAddr("198.19.248.0") {
		t.Errorf("last subnet %s, want 198.19.248.0/21 (netns slot 63)", last)
	}
	if _, err := Subnet(Subnets); err == nil {
		t.Error("Subnet beyond the reservation accepted")
	}
}
