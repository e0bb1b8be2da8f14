package netns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"regexp"
	"strings"
	"sync"

	"github.com/zkchaos/zkchaos/host/proc"
)

// TotalSlots is the number of /21 slots of 198.18.0.0/15: MaxSlots for
// networks this package creates, then DockerSlots for Docker networks
// that Attach joins.
const TotalSlots = MaxSlots + DockerSlots

// linkNameRE is what the kernel accepts as an interface name, narrowed to
// what the harness's names use. It is compiled on first use, as
// hostNameRE: the bounded repetition makes a large program, and every
// process that links this package (each built-in worker, through
// resource/pgfence) would compile it at start-up.
var linkNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$`) })

// Attach claims slot (one of the Docker slots, MaxSlots..TotalSlots-1) for
// run runID, owned by owners, on an existing bridge that
// someone else made and owns (the Docker network cluster/docker created on
// that slot's subnet). Hosts then get namespaces with veths on that bridge,
// addresses from base+1+firstHost upward and the slot's gateway (base+1,
// the bridge's address) as default route, so that client faults work as
// on a network of Create's.
//
// The claim follows the slot protocol (slot.go) with one difference: the
// slot file records the bridge and that it is external, so Close, the
// run's janitor and chaos cleanup (after a crash too) remove the run's
// namespaces, veths and forwarding rules but never the bridge. The slot's
// lock is waited for (bounded by ctx) rather than tried: the engine gave
// this run the subnet, so no other live run can claim it, and a sweep in
// progress is one of a dead run's leftovers.
func Attach(ctx context.Context, runID string, owners proc.Owners, slot int, bridge string, firstHost int, log *slog.Logger) (*Network, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if slot < MaxSlots || slot >= TotalSlots {
		return nil, fmt.Errorf("attach to %s: slot %d is not a Docker slot (%d..%d)", bridge, slot, MaxSlots, TotalSlots-1)
	}
	if !linkNameRE().MatchString(bridge) || bridge == bridgeName(slot) {
		return nil, fmt.Errorf("attach to slot %d: bad bridge name %q", slot, bridge)
	}
	if _, err := hostAddr(SlotPrefix(slot), firstHost); err != nil || firstHost < 1 {
		return nil, fmt.Errorf("attach to %s: first host %d out of range 1..%d", bridge, firstHost, 1<<(32-21)-3)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	owner, err := newOwner(runID, owners)
	if err != nil {
		return nil, err
	}
	owner.Bridge, owner.ExternalBridge = bridge, true
	n, err := attach(ctx, slot, owner)
	if err != nil {
		return nil, fmt.Errorf("attach run %s to %s (slot %d): %w", runID, bridge, slot, err)
	}
	n.log = log
	n.next = firstHost - 1
	first, _ := hostAddr(n.Prefix, firstHost)
	log.Info("network attached", "slot", slot, "bridge", bridge, "gateway", n.Gateway, "prefix", n.Prefix, "first_host", first)
	return n, nil
}

// attach does Attach's claim under the slot's lock: the slot must be
// empty, the bridge must hold the slot's gateway address, then the slot
// file is written and the forwarding rules added.
func attach(ctx context.Context, s int, owner SlotFile) (*Network, error) {
	unlock, _, err := lockSlot(ctx, s, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if empty, err := slotEmpty(ctx, s); err != nil {
		return nil, err
	} else if !empty {
		return nil, leftoverError(s)
	}
	n := makeNetwork(s, owner.Bridge, owner)
	if err := checkGateway(ctx, owner.Bridge, n.Gateway, n.Prefix.Bits()); err != nil {
		return nil, err
	}
	if err := writeSlotFile(s, owner); err != nil {
		return nil, err
	}
	if err := addForward(ctx, owner.Bridge); err != nil {
		if cerr := sweepLocked(context.WithoutCancel(ctx), s, &owner); cerr != nil {
			err = errors.Join(err, fmt.Errorf("clean up slot %d: %w", s, cerr))
		}
		return nil, err
	}
	return n, nil
}

// leftoverError says what keeps slot s from being claimed, so the user
// knows to run chaos cleanup.
func leftoverError(s int) error {
	who := "no slot file"
	if o, err := readSlotFile(s); err == nil && o != nil {
		who = fmt.Sprintf("slot file of run %q, controller %d", o.RunID, o.ControllerPID)
	}
	return fmt.Errorf("slot %d still holds another run's namespaces or veths (%s): run chaos cleanup", s, who)
}

// checkGateway makes sure the external bridge exists and holds the
// slot's gateway address, so hosts are never attached to the wrong
// network (a bridge passed with another slot's number).
func checkGateway(ctx context.Context, bridge, gw string, bits int) error {
	out, err := run(ctx, "ip", "-o", "-4", "addr", "show", "dev", bridge)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", bridge, err)
	}
	want := fmt.Sprintf("%s/%d", gw, bits)
	for _, f := range strings.Fields(out) {
		if f == want {
			return nil
		}
	}
	return fmt.Errorf("bridge %s does not hold the slot's gateway %s (has: %s)", bridge, want, strings.TrimSpace(out))
}

// SlotOf is the slot whose /21 is p, e.g. the subnet of the Docker network
// to Attach to.
func SlotOf(p netip.Prefix) (int, error) {
	for s := 0; s < TotalSlots; s++ {
		if SlotPrefix(s) == p {
			return s, nil
		}
	}
	return 0, fmt.Errorf("%s is not a slot of %s", p, netip.PrefixFrom(SlotPrefix(0).Addr(), 15))
}
