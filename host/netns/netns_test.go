package netns

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/proc"
)

// The test binary doubles as the program run inside namespaces (there is
// no nc or socat on the test machine): ZKC_TEST_HELPER selects a role.
const helperEnv = "ZKC_TEST_HELPER"

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(helper(role))
	}
	os.Exit(m.Run())
}

func helper(role string) int {
	verb, addr, _ := strings.Cut(role, ":")
	switch verb {
	case "listen":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("ready")
		for {
			c, err := l.Accept()
			if err != nil {
				return 1
			}
			io.WriteString(c, "ok\n")
			c.Close()
		}
	case "dial":
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		b, _ := io.ReadAll(c)
		if string(b) != "ok\n" {
			fmt.Fprintf(os.Stderr, "read %q\n", b)
			return 1
		}
		return 0
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	}
	return 2
}

func needRoot(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("network namespaces unavailable: %v", err)
	}
}

// netSeq makes the run id of every test network unique.
var netSeq int

func newNetwork(t *testing.T) *Network {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	netSeq++
	n, err := Create(ctx, fmt.Sprintf("test-%s-%d-%d", t.Name(), os.Getpid(), netSeq), proc.Self(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := n.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, _, err := SweepSlot(ctx, n.Slot, OwnedBy(n.RunID)); err != nil { // safety net, and safe twice
			t.Errorf("sweep: %v", err)
		}
		assertGone(t, n.Slot)
	})
	return n
}

// helperCmd starts the test binary in role inside h; it is reaped in the
// background and killed at cleanup.
func helperCmd(t *testing.T, ctx context.Context, h *Host, role string) (*exec.Cmd, io.Reader) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	if h == nil {
		cmd = exec.CommandContext(ctx, self)
	} else {
		cmd = h.Command(ctx, self)
	}
	cmd.Env = append(os.Environ(), helperEnv+"="+role)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// dial reports whether from (nil: the root namespace) gets "ok" from addr.
func dial(t *testing.T, from *Host, addr string) bool {
	t.Helper()
	cmd, out := helperCmd(t, context.Background(), from, "dial:"+addr)
	io.Copy(io.Discard, out)
	return cmd.Wait() == nil
}

// reaches reports whether from gets "ok" from addr within 10 s, dialling
// again after each failure: a path that should be open is judged by
// whether it opens, not by one dial's 1 s, which a loaded machine
// outlasted once (a fresh veth, the dialler's own start). A cut is
// judged by dial: it must hold at once.
func reaches(t *testing.T, from *Host, addr string) bool {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if dial(t, from, addr) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

func listen(t *testing.T, h *Host, addr string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd, out := helperCmd(t, ctx, h, "listen:"+addr)
	t.Cleanup(func() { cancel(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("listener in %s: %q, %v", h.NS, line, err)
	}
	return cmd
}

func TestNetwork(t *testing.T) {
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := newNetwork(t)
	if !n.Prefix.Contains(mustAddr(t, n.Gateway)) {
		t.Fatalf("gateway %s outside %s", n.Gateway, n.Prefix)
	}
	infos, err := Slots()
	if err != nil {
		t.Fatal(err)
	}
	if i := findSlot(infos, n.Slot); i == nil || i.RunID != n.RunID || !i.Alive || !i.HasBridge || i.Leftover() {
		t.Errorf("Slots() entry for slot %d: %+v", n.Slot, i)
	}

	for _, bad := range []string{"", "Bad Name", "a/b", strings.Repeat("x", 40)} {
		if _, err := n.AddHost(ctx, bad); err == nil {
			t.Errorf("AddHost(%q) accepted", bad)
		}
	}
	a, err := n.AddHost(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.AddHost(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.AddHost(ctx, "a"); err == nil {
		t.Error("duplicate AddHost accepted")
	}
	t.Logf("a=%s b=%s gateway=%s", a.IP, b.IP, n.Gateway)

	srv := listen(t, a, net.JoinHostPort(a.IP, "7000"))
	// ip netns exec execs in place: the PID is the program, in the namespace.
	self, _ := os.Executable()
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", srv.Process.Pid)); exe != self {
		t.Errorf("pid %d is %q, want the program itself %q", srv.Process.Pid, exe, self)
	}
	ours, _ := os.Readlink("/proc/self/ns/net")
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", srv.Process.Pid))
	if err != nil || theirs == ours {
		t.Errorf("pid %d net namespace %q (%v), ours %q: want different", srv.Process.Pid, theirs, err, ours)
	}

	addr := net.JoinHostPort(a.IP, "7000")
	if !reaches(t, b, addr) {
		t.Fatal("b cannot reach a")
	}
	if !reaches(t, nil, addr) {
		t.Fatal("the root namespace cannot reach a through the bridge")
	}

	// The FORWARD accept is what lets bridged traffic through where
	// FORWARD's policy is DROP and br_netfilter is loaded.
	if forwardDrops(t) {
		unlock, err := fwdLock()
		if err != nil {
			t.Fatal(err)
		}
		deleteRules(ctx, n.Bridge)
		unlock()
		if dial(t, b, addr) {
			t.Error("b reached a without the ZKCHAOS-FWD rule; the rule is not what makes it work")
		}
		if err := addForward(ctx, n.Bridge); err != nil {
			t.Fatal(err)
		}
		if !reaches(t, b, addr) {
			t.Fatal("b cannot reach a after restoring the rule")
		}
	} else {
		t.Log("FORWARD policy is not DROP or br_netfilter is off: not checking that the rule is needed")
	}

	// Block at either end cuts the pair; Heal restores it.
	for _, c := range []struct{ blocker, peer *Host }{{b, a}, {a, b}} {
		if err := c.blocker.Block(ctx, c.peer.IP); err != nil {
			t.Fatal(err)
		}
		if dial(t, b, addr) {
			t.Errorf("b reached a with %s blocking %s", c.blocker.Name, c.peer.Name)
		}
		if !reaches(t, nil, addr) {
			t.Errorf("root lost a while only %s is blocked", c.peer.Name)
		}
		if err := c.blocker.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if !reaches(t, b, addr) {
			t.Errorf("b cannot reach a after %s healed", c.blocker.Name)
		}
	}
	if err := a.Block(ctx, "not-an-ip"); err == nil {
		t.Error("Block accepted a non-IP")
	}

	if err := n.RemoveHost(ctx, b); err != nil {
		t.Fatal(err)
	}
	if nsExists(t, b.NS) || linkExists(t, b.vethRoot) {
		t.Errorf("host b left namespace or veth %s", b.vethRoot)
	}
	// The listener inside a is killed by Close (it is still running).
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if proc.Alive(srv.Process.Pid) {
		t.Errorf("listener pid %d survived Close", srv.Process.Pid)
	}
	assertGone(t, n.Slot)
	if err := n.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestSweepSlot(t *testing.T) {
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := newNetwork(t)
	h, err := n.AddHost(ctx, "sleeper")
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := helperCmd(t, ctx, h, "sleep")
	go cmd.Wait()
	t.Cleanup(func() { cmd.Process.Kill() })

	// A live owner's slot is swept by no one else.
	for name, rule := range map[string]SweepRule{"another run's janitor": OwnedBy("someone-else"), "cleanup": Abandoned} {
		if _, swept, err := SweepSlot(ctx, n.Slot, rule); err != nil || swept {
			t.Errorf("%s swept a live run's slot: swept %v, %v", name, swept, err)
		}
	}
	if !linkExists(t, n.Bridge) || !nsExists(t, h.NS) {
		t.Fatal("slot damaged by a sweep that was not allowed")
	}

	// Without the slot file (as an older version leaves a crash between
	// bridge and file) the slot is still found, and has no live owner:
	// the run's janitor leaves it, and the sweep every run's start makes
	// removes it. All of it under the slot's lock, as a crashed claim's
	// slot would be met: other packages' tests judge what their own runs
	// left by what a slot holds under that lock (chaostest), and must not
	// see this slot's file gone while its bridge still stands.
	unlock, _, err := lockSlot(ctx, n.Slot, true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := os.Remove(slotPath(n.Slot)); err != nil {
		t.Fatal(err)
	}
	infos, err := Slots()
	if err != nil {
		t.Fatal(err)
	}
	i := findSlot(infos, n.Slot)
	if i == nil || i.HasFile || !i.HasBridge || len(i.Namespaces) != 1 || i.Namespaces[0] != h.NS || !i.Leftover() {
		t.Errorf("Slots() entry for slot %d without file: %+v", n.Slot, i)
	}
	if _, swept, err := sweepSlotLocked(ctx, n.Slot, OwnedBy(n.RunID)); err != nil || swept {
		t.Errorf("the run's janitor swept a slot with no file naming it: swept %v, %v", swept, err)
	}
	if _, swept, err := sweepSlotLocked(ctx, n.Slot, Abandoned); err != nil || !swept {
		t.Fatalf("sweep of the abandoned slot %d: swept %v, %v", n.Slot, swept, err)
	}
	unlock()
	assertGone(t, n.Slot)
	deadline := time.Now().Add(5 * time.Second)
	for proc.Alive(cmd.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if proc.Alive(cmd.Process.Pid) {
		t.Errorf("process %d in the namespace survived the sweep", cmd.Process.Pid)
	}
	if _, _, err := SweepSlot(ctx, n.Slot, Abandoned); err != nil {
		t.Errorf("second sweep: %v", err)
	}
}

func TestSlotName(t *testing.T) {
	for name, want := range map[string]int{"zkc0": 0, "zkc12-n1": 12, "zkc55": 55, "zkc56-w1": 56, "zkc63": 63, "zkc64": -1, "zkc01": -1, "zkc": -1, "zkc1x": -1, "docker0": -1} {
		s, ok := slotOfName(name)
		if (want >= 0) != ok || (ok && s != want) {
			t.Errorf("slotOfName(%q) = %d, %v; want %d", name, s, ok, want)
		}
	}
	if p := SlotPrefix(63); p.String() != "198.19.248.0/21" {
		t.Errorf("slot 63 prefix %s", p)
	}
	for _, s := range []int{0, 56, 63} {
		if got, err := SlotOf(SlotPrefix(s)); err != nil || got != s {
			t.Errorf("SlotOf(%s) = %d, %v; want %d", SlotPrefix(s), got, err, s)
		}
	}
	for _, p := range []string{"198.19.248.0/24", "198.20.0.0/21", "10.0.0.0/21"} {
		if s, err := SlotOf(netip.MustParsePrefix(p)); err == nil {
			t.Errorf("SlotOf(%s) = %d, want an error", p, s)
		}
	}
	if a, _ := hostAddr(SlotPrefix(1), 1); a.String() != "198.18.8.2" {
		t.Errorf("slot 1 host 1 address %s", a)
	}
	if _, err := hostAddr(SlotPrefix(0), 2046); err == nil {
		t.Error("host 2046 fits in a /21 next to the gateway and broadcast")
	}
}

// assertGone checks, by listing, that nothing of slot s is left, unless
// another process's run (a test of another package running in parallel) has claimed
// the slot since: it holds the slot's lock so that no claim happens while
// it looks.
func assertGone(t *testing.T, s int) {
	t.Helper()
	ctx := context.Background()
	unlockSlot, _, err := lockSlot(ctx, s, true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlockSlot()
	if o, _ := readSlotFile(s); o != nil && o.ControllerPID != os.Getpid() && o.Alive() {
		t.Logf("slot %d claimed since by run %s: not checking it is gone", s, o.RunID)
		return
	}
	nss, err := listNamespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left := nsOfSlot(nss, s); len(left) > 0 {
		t.Errorf("slot %d: namespaces left: %v", s, left)
	}
	links, err := listLinks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(fmt.Sprintf(`^(zkc%d|zk%d[hn]\d+)$`, s, s))
	for _, l := range links {
		if re.MatchString(l) {
			t.Errorf("slot %d: link %s left", s, l)
		}
	}
	if _, err := os.Stat(slotPath(s)); err == nil {
		t.Errorf("slot %d: %s left", s, slotPath(s))
	}
	unlock, err := fwdLock()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	chain, err := ipt(ctx, "-S")
	if err != nil {
		t.Fatal(err)
	}
	exists, rules, err := chainState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(fmt.Sprintf(`-[io] zkc%d( |$)`, s)).MatchString(chain) {
		t.Errorf("slot %d: rules left in %s:\n%s", s, FwdChain, chain)
	}
	fwd, err := ipt(ctx, "-S", "FORWARD")
	if err != nil {
		t.Fatal(err)
	}
	jump := strings.Contains(fwd, "-j "+FwdChain)
	if exists != jump {
		t.Errorf("%s exists: %v, FORWARD jumps to it: %v", FwdChain, exists, jump)
	}
	if exists && rules == 0 {
		t.Errorf("empty %s left behind", FwdChain)
	}
}

func forwardDrops(t *testing.T) bool {
	b, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables")
	if err != nil || strings.TrimSpace(string(b)) != "1" {
		return false
	}
	out, err := ipt(context.Background(), "-S", "FORWARD")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(out, "-P FORWARD DROP")
}

func nsExists(t *testing.T, ns string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", ns))
	return err == nil
}

func linkExists(t *testing.T, name string) bool {
	links, err := listLinks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if l == name {
			return true
		}
	}
	return false
}

func findSlot(infos []SlotInfo, s int) *SlotInfo {
	for i := range infos {
		if infos[i].Slot == s {
			return &infos[i]
		}
	}
	return nil
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
