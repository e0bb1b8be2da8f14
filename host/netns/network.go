package netns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Network is one run's slot: a bridge in the root namespace holding the
// gateway address, and the hosts (namespaces) attached to it. The bridge
// is the network's own (Create) or someone else's (Attach: a Docker
// network's), which it never removes.
type Network struct {
	Slot    int
	Bridge  string
	Gateway string // the bridge's IP, the controller's address on the slot
	RunID   string
	Prefix  netip.Prefix

	owner  SlotFile // what the slot file says, so Close can tell ours
	log    *slog.Logger
	mu     sync.Mutex
	next   int // veth counter k; addresses are never reused within a run
	hosts  map[string]*Host
	closed bool
}

func slotPath(s int) string { return filepath.Join(StateDir, fmt.Sprintf("slot-%d.json", s)) }

func bridgeName(s int) string { return fmt.Sprintf("zkc%d", s) }

// SlotPrefix is the slot's /21: 198.18.0.0 + s·2048.
func SlotPrefix(s int) netip.Prefix {
	base := 198<<24 | 18<<16 | uint32(s)*2048
	return netip.PrefixFrom(addrFrom(base), 21)
}

func addrFrom(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// hostAddr is the address of the k-th host (k ≥ 1); the gateway is +1.
func hostAddr(p netip.Prefix, k int) (netip.Addr, error) {
	b := p.Addr().As4()
	base := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if k < 0 || k+1 >= 1<<(32-p.Bits())-1 {
		return netip.Addr{}, fmt.Errorf("slot %s has no room for host %d", p, k)
	}
	return addrFrom(base + 1 + uint32(k)), nil
}

// makeNetwork is the Network of slot s on bridge, owned by owner.
func makeNetwork(s int, bridge string, owner SlotFile) *Network {
	n := &Network{Slot: s, Bridge: bridge, RunID: owner.RunID, Prefix: SlotPrefix(s), owner: owner, hosts: map[string]*Host{}}
	gw, _ := hostAddr(n.Prefix, 0)
	n.Gateway = gw.String()
	return n
}

// Create claims the first free slot for run runID, owned by owners (the
// slot file names them), and sets up its bridge and forwarding. The claim follows
// the slot protocol (slot.go): a slot is free when nobody holds its lock
// and nothing of it exists; the owner is recorded before anything is made.
func Create(ctx context.Context, runID string, owners proc.Owners, log *slog.Logger) (*Network, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	owner, err := newOwner(runID, owners)
	if err != nil {
		return nil, err
	}
	for s := 0; s < MaxSlots; s++ {
		n, err := claim(ctx, s, owner)
		if err != nil {
			return nil, err
		}
		if n != nil {
			n.log = log
			log.Info("network created", "slot", s, "bridge", n.Bridge, "gateway", n.Gateway, "prefix", n.Prefix)
			return n, nil
		}
	}
	return nil, fmt.Errorf("no free network slot among %d (run chaos cleanup?)", MaxSlots)
}

// setup gives the new bridge its address and forwarding; the slot's lock
// is held.
func (n *Network) setup(ctx context.Context) error {
	pfx := fmt.Sprintf("%s/%d", n.Gateway, n.Prefix.Bits())
	if _, err := run(ctx, "ip", "addr", "add", pfx, "dev", n.Bridge); err != nil {
		return err
	}
	if _, err := run(ctx, "ip", "link", "set", n.Bridge, "up"); err != nil {
		return err
	}
	return addForward(ctx, n.Bridge)
}

// hostNameRE is what a host's name may be, compiled on first use (see
// linkNameRE).
var hostNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`) })

// AddHost creates namespace zkc<s>-<name> with one veth into the bridge and
// the next address of the slot. Interface names are derived from the slot
// and a counter, not from name, because IFNAMSIZ allows 15 characters.
func (n *Network) AddHost(ctx context.Context, name string) (*Host, error) {
	if !hostNameRE().MatchString(name) {
		return nil, fmt.Errorf("add host %q: name must match %s", name, hostNameRE())
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, fmt.Errorf("add host %q: network slot %d is closed", name, n.Slot)
	}
	if _, dup := n.hosts[name]; dup {
		n.mu.Unlock()
		return nil, fmt.Errorf("add host %q: already on slot %d", name, n.Slot)
	}
	n.next++
	k := n.next
	n.mu.Unlock()

	addr, err := hostAddr(n.Prefix, k)
	if err != nil {
		return nil, fmt.Errorf("add host %q: %w", name, err)
	}
	h := &Host{Name: name, NS: fmt.Sprintf("zkc%d-%s", n.Slot, name), IP: addr.String(),
		vethRoot: fmt.Sprintf("zk%dh%d", n.Slot, k), vethNS: fmt.Sprintf("zk%dn%d", n.Slot, k)}
	if len(h.vethRoot) > 15 || len(h.vethNS) > 15 {
		return nil, fmt.Errorf("add host %q: interface name %s longer than 15 characters", name, h.vethNS)
	}
	if err := n.setupHost(ctx, h); err != nil {
		if cerr := removeHost(context.WithoutCancel(ctx), h.NS, h.vethRoot); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, fmt.Errorf("add host %q on slot %d: %w", name, n.Slot, err)
	}
	n.mu.Lock()
	n.hosts[name] = h
	n.mu.Unlock()
	n.log.Debug("host added", "host", name, "ns", h.NS, "ip", h.IP, "veth", h.vethRoot)
	return h, nil
}

func (n *Network) setupHost(ctx context.Context, h *Host) error {
	cidr := fmt.Sprintf("%s/%d", h.IP, n.Prefix.Bits())
	steps := [][]string{
		{"ip", "netns", "add", h.NS},
		{"ip", "link", "add", h.vethRoot, "type", "veth", "peer", "name", h.vethNS},
		{"ip", "link", "set", h.vethNS, "netns", h.NS},
		{"ip", "link", "set", h.vethRoot, "master", n.Bridge},
		{"ip", "link", "set", h.vethRoot, "up"},
		{"ip", "-n", h.NS, "addr", "add", cidr, "dev", h.vethNS},
		{"ip", "-n", h.NS, "link", "set", h.vethNS, "up"},
		{"ip", "-n", h.NS, "link", "set", "lo", "up"},
		{"ip", "-n", h.NS, "route", "add", "default", "via", n.Gateway},
		// The partition chain, empty until Block.
		{"ip", "netns", "exec", h.NS, "iptables", "-w", "-N", hostChain},
		{"ip", "netns", "exec", h.NS, "iptables", "-w", "-A", "INPUT", "-j", hostChain},
		{"ip", "netns", "exec", h.NS, "iptables", "-w", "-A", "OUTPUT", "-j", hostChain},
	}
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// Hosts lists the hosts added and not removed.
func (n *Network) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*Host, 0, len(n.hosts))
	for _, h := range n.hosts {
		out = append(out, h)
	}
	return out
}

// RemoveHost kills what still runs in the host's namespace and deletes it
// and its veth.
func (n *Network) RemoveHost(ctx context.Context, h *Host) error {
	h.removing.Store(true)
	defer h.removing.Store(false)
	if err := removeHost(ctx, h.NS, h.vethRoot); err != nil {
		return fmt.Errorf("remove host %q from slot %d: %w", h.Name, n.Slot, err)
	}
	n.mu.Lock()
	delete(n.hosts, h.Name)
	n.mu.Unlock()
	return nil
}

// Close releases the slot: everything of it is removed, under the slot's
// lock and only if the slot file still names this network's owner. It is
// idempotent. A slot taken by another run since (only chaos cleanup --all
// can take a live run's slot) is an error and left alone.
func (n *Network) Close(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	got, swept, err := SweepSlot(ctx, n.Slot, func(o *SlotFile) bool { return sameOwner(o, &n.owner) })
	switch {
	case err != nil:
		return fmt.Errorf("close network: %w", err)
	case swept:
		n.log.Info("network closed", "slot", n.Slot)
	case got == nil:
		n.log.Warn("network already gone: its slot file was removed by someone else (chaos cleanup "+setting.Name("CleanupAll")+"?)", "slot", n.Slot)
	default:
		return fmt.Errorf("close slot %d: slot file names run %q, not ours (%q); not sweeping", n.Slot, got.RunID, n.RunID)
	}
	return nil
}

// slotOfName parses the slot from a name of the form zkc<s>[-...].
func slotOfName(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "zkc")
	if !ok {
		return 0, false
	}
	digits := rest
	for i, c := range rest {
		if c < '0' || c > '9' {
			digits = rest[:i]
			break
		}
	}
	if digits == "" || (len(rest) > len(digits) && rest[len(digits)] != '-') {
		return 0, false
	}
	s, err := strconv.Atoi(digits)
	if err != nil || s >= TotalSlots || strconv.Itoa(s) != digits {
		return 0, false
	}
	return s, true
}
