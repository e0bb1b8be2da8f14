package netns

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/proc"
)

// externalBridge makes a bridge as the Docker engine would for a Docker
// slot (gateway address, up) and removes it at the test's end: the
// stand-in for a Docker network where no engine is needed to test what
// netns does with it (the real one: janitor's docker tests). It takes the
// highest Docker slot below compose's (63) whose subnet no interface here
// uses and that has no slot file, and skips when there is none.
func externalBridge(t *testing.T) (slot int, bridge string) {
	t.Helper()
	used, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for s := TotalSlots - 2; s >= MaxSlots; s-- {
		p := SlotPrefix(s)
		if _, err := os.Stat(slotPath(s)); err == nil || overlaps(p, used) {
			continue
		}
		bridge = fmt.Sprintf("zkt%d", s)
		gw, _ := hostAddr(p, 0)
		ctx := context.Background()
		for _, c := range [][]string{
			{"link", "add", bridge, "type", "bridge"},
			{"addr", "add", fmt.Sprintf("%s/%d", gw, p.Bits()), "dev", bridge},
			{"link", "set", bridge, "up"},
		} {
			if _, err := run(ctx, "ip", c...); err != nil {
				_ = deleteLink(ctx, bridge)
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { _ = deleteLink(context.Background(), bridge) })
		return s, bridge
	}
	t.Skip("no free Docker slot for a stand-in bridge")
	return 0, ""
}

func overlaps(p netip.Prefix, addrs []net.Addr) bool {
	for _, a := range addrs {
		if q, err := netip.ParsePrefix(a.String()); err == nil && q.Overlaps(p) {
			return true
		}
	}
	return false
}

// TestAttachLeavesTheExternalBridge: hosts attached to a bridge someone
// else owns get addresses from base+1+firstHost, reach each other and the
// gateway, and their run's Close, and a sweep after the controller died,
// remove the namespaces, veths, rules and slot file but never the bridge.
func TestAttachLeavesTheExternalBridge(t *testing.T) {
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	slot, br := externalBridge(t)
	run := fmt.Sprintf("attach-%d", os.Getpid())

	if _, err := Attach(ctx, run, proc.Self(), 3, br, 127, log); err == nil {
		t.Error("Attach took a local slot")
	}
	for wrong := MaxSlots; wrong < TotalSlots; wrong++ {
		if _, err := os.Stat(slotPath(wrong)); wrong == slot || err == nil {
			continue // ours, or in use by another run
		}
		if _, err := Attach(ctx, run, proc.Self(), wrong, br, 127, log); err == nil || !strings.Contains(err.Error(), "gateway") {
			t.Errorf("Attach of slot %d to the bridge of slot %d: %v; want a gateway mismatch", wrong, slot, err)
		}
		if o, _ := readSlotFile(wrong); o != nil && o.RunID == run {
			t.Errorf("refused Attach left slot file %s", slotPath(wrong))
		}
		break
	}

	n, err := Attach(ctx, run, proc.Self(), slot, br, 127, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = SweepSlot(context.Background(), slot, OwnedBy(run)) })
	f, err := readSlotFile(slot)
	if err != nil || f == nil || f.Bridge != br || !f.ExternalBridge || f.RunID != run {
		t.Fatalf("slot file %+v, %v; want run %s on external bridge %s", f, err, run, br)
	}
	a, err := n.AddHost(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.AddHost(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	base := SlotPrefix(slot).Addr().As4()
	if want := fmt.Sprintf("%d.%d.%d.128", base[0], base[1], base[2]); a.IP != want {
		t.Errorf("first attached host at %s, want %s", a.IP, want)
	}
	addr := net.JoinHostPort(a.IP, "7000")
	listen(t, a, addr)
	if !reaches(t, b, addr) || !reaches(t, nil, addr) {
		t.Fatal("hosts on the external bridge do not reach each other or the gateway")
	}
	if !strings.Contains(forwardRulesOf(t, br), "-i "+br+" -o "+br+" -j ACCEPT") {
		t.Errorf("no forwarding rule for %s", br)
	}

	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertAttachedGone(t, slot, br)

	// A controller that died: its slot names it, dead; a sweep by
	// cleanup's rule removes the namespace and keeps the bridge.
	ctrl := exec.Command("sleep", "60")
	if err := ctrl.Start(); err != nil {
		t.Fatal(err)
	}
	n2, err := Attach(ctx, run+"-dead", proc.ControlledBy(ctrl.Process.Pid), slot, br, 127, log)
	if err != nil {
		ctrl.Process.Kill()
		ctrl.Wait()
		t.Fatal(err)
	}
	if _, err := n2.AddHost(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	ctrl.Process.Kill()
	ctrl.Wait()
	sweepAbandoned(t, ctx, slot)
	assertAttachedGone(t, slot, br)
}

// assertAttachedGone: nothing of attached slot s is left but the bridge,
// which still holds its gateway address.
func assertAttachedGone(t *testing.T, s int, br string) {
	t.Helper()
	assertGone(t, s)
	if !linkExists(t, br) {
		t.Fatalf("external bridge %s removed", br)
	}
	gw, _ := hostAddr(SlotPrefix(s), 0)
	if err := checkGateway(context.Background(), br, gw.String(), 21); err != nil {
		t.Error(err)
	}
	if r := forwardRulesOf(t, br); r != "" {
		t.Errorf("forwarding rules of %s left: %s", br, r)
	}
}

// forwardRulesOf lists the rules of FwdChain that name bridge.
func forwardRulesOf(t *testing.T, bridge string) string {
	t.Helper()
	out, err := ipt(context.Background(), "-S")
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "-A "+FwdChain+" ") && strings.Contains(l, " "+bridge+" ") {
			rules = append(rules, l)
		}
	}
	return strings.Join(rules, "\n")
}
