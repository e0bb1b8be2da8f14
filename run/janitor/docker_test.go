package janitor

// Tests of workers' namespaces on a Docker network (netns.Attach) and of
// their removal with the run's containers. They live here because netns
// cannot import cluster/docker (cluster/docker imports netns), and the
// janitor is what removes the three together.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/docker"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/dockertest"
)

// needDockerImage skips unless namespaces can be made here, a Docker
// engine answers and the ZooKeeper image of this machine is built (these
// tests do not build it: `chaos image build`, or the cluster/docker
// tests, do). It returns the image's tag.
func needDockerImage(t *testing.T) string {
	t.Helper()
	if err := netns.Available(); err != nil {
		t.Skipf("namespaces attached to a Docker network not tested: %v", err)
	}
	return dockertest.Image(t)
}

// dockerRun is a run with a 1-server ensemble in containers and a worker
// namespace attached to its network.
type dockerRun struct {
	id   string
	c    *docker.Cluster
	nw   docker.Network
	net  *netns.Network
	host *netns.Host
}

// startDockerRun makes a run owned by owners: a 1-server
// ensemble (started and serving when start), a namespace attached to its
// network and, when the test ends, a removal by label and slot of
// whatever the test has not removed.
func startDockerRun(t *testing.T, ctx context.Context, tag string, owners proc.Owners, start bool) *dockerRun {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	r := &dockerRun{id: fmt.Sprintf("jd%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = docker.Cleanup(ctx, r.id)
		_, _ = netns.ReleaseRun(ctx, r.id)
	})
	c, err := docker.New(ctx, docker.Config{Nodes: 1, Dir: t.TempDir(), RunID: r.id, Owners: owners, Image: tag, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	r.c, r.nw = c, c.Network()
	if start {
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	slot, err := netns.SlotOf(r.nw.Subnet)
	if err != nil {
		t.Fatal(err)
	}
	if r.net, err = netns.Attach(ctx, r.id, owners, slot, r.nw.Bridge, 127, log); err != nil {
		t.Fatal(err)
	}
	if r.host, err = r.net.AddHost(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	return r
}

// srvr sends ZooKeeper's srvr from inside h to addr:2181 with bash's
// /dev/tcp and returns the answer.
func srvr(ctx context.Context, h *netns.Host, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	script := fmt.Sprintf("exec 3<>/dev/tcp/%s/2181 && echo srvr >&3 && cat <&3", addr)
	cmd := h.Command(ctx, "bash", "-c", script)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("srvr from %s to %s: %w: %s", h.NS, addr, err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// TestAttachToDockerNetwork: a namespace attached to the bridge of the
// run's Docker network reaches the server's container, which shows that
// Docker's rules for an internal network let the bridged traffic through
// (FORWARD's policy here is DROP); Block in the namespace cuts it, Heal
// restores it; Close removes the namespace and leaves the Docker network
// and its server as they were.
func TestAttachToDockerNetwork(t *testing.T) {
	tag := needDockerImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := startDockerRun(t, ctx, tag, proc.Self(), true)
	t.Cleanup(func() { _ = r.c.Close(context.Background()) })
	server := r.c.Node(1).IP()
	if want := r.nw.Subnet.Addr().Next().Next(); server != want.String() {
		t.Fatalf("server at %s, want %s", server, want)
	}
	base := r.nw.Subnet.Addr().As4()
	if want := fmt.Sprintf("%d.%d.%d.128", base[0], base[1], base[2]); r.host.IP != want {
		t.Errorf("attached host at %s, want %s", r.host.IP, want)
	}

	out, err := srvr(ctx, r.host, server)
	if err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("srvr from the attached namespace: %q, %v", out, err)
	}
	if err := r.host.Block(ctx, server); err != nil {
		t.Fatal(err)
	}
	if out, err := srvr(ctx, r.host, server); err == nil {
		t.Errorf("srvr reached the server through a block: %q", out)
	}
	if err := r.host.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := srvr(ctx, r.host, server); err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Errorf("srvr after heal: %q, %v", out, err)
	}

	if err := r.net.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", r.host.NS)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s left after Close: %v", r.host.NS, err)
	}
	if _, err := os.Stat(filepath.Join(netns.StateDir, fmt.Sprintf("slot-%d.json", r.net.Slot))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("slot file of slot %d left after Close: %v", r.net.Slot, err)
	}
	if !linkUp(t, r.nw.Bridge) {
		t.Errorf("Docker's bridge %s gone after the attached network's Close", r.nw.Bridge)
	}
	if st, err := cluster.FourLetter(ctx, server+":2181", "srvr"); err != nil || !strings.Contains(st, "Mode: standalone") {
		t.Errorf("server not reachable from the controller after Close: %q, %v", st, err)
	}
}

// TestSweepRemovesDockerRun: the janitor's sweep of a run whose
// controller is dead removes its worker, containers, attached namespace,
// slot file, forwarding rules and Docker network, and nothing is left
// for a second sweep.
func TestSweepRemovesDockerRun(t *testing.T) {
	tag := needDockerImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctrl := startController(t)
	// This test is the run's janitor: while it lives, no other run's
	// start sweeps the run before its Sweep does.
	owners := proc.ControlledBy(ctrl.Process.Pid)
	owners.Janitor = proc.IdentOf(os.Getpid())
	r := startDockerRun(t, ctx, tag, owners, true)
	worker := r.host.Command(ctx, "sleep", "300")
	worker.Env = append(os.Environ(), proc.Env(r.id, owners)...)
	worker.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = worker.Wait(); close(reaped) }()
	t.Cleanup(func() { _ = worker.Process.Kill(); <-reaped })
	waitExec(t, worker.Process.Pid, "sleep")
	killController(t, ctrl)

	var logBuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	start := time.Now()
	if err := Sweep(ctx, r.id, nil, log); err != nil {
		t.Fatalf("sweep: %v\n%s", err, logBuf.String())
	}
	t.Logf("MEASURE janitor sweep of a docker run (1 container, 1 attached namespace, 1 worker): %s", time.Since(start).Round(time.Millisecond))
	t.Log(logBuf.String())
	select {
	case <-reaped:
	case <-time.After(2 * time.Second):
		t.Error("the worker in the attached namespace survived the sweep")
	}
	assertDockerRunGone(t, ctx, r)
	logs := logBuf.String()
	if c, n := strings.Index(logs, "removed container"), strings.Index(logs, "removed network"); c < 0 || n < c {
		t.Errorf("want the container removed, then the network:\n%s", logs)
	}
	if err := Sweep(ctx, r.id, nil, log); err != nil {
		t.Errorf("second sweep: %v", err)
	}
}

// TestCleanupLeavesLiveDockerRuns: chaos cleanup without --all removes
// the Docker run whose controller is dead and leaves the one whose
// controller lives (this test), containers, namespace and network.
func TestCleanupLeavesLiveDockerRuns(t *testing.T) {
	tag := needDockerImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	live := startDockerRun(t, ctx, tag, proc.Self(), false)
	t.Cleanup(func() { _ = live.c.Close(context.Background()) })
	ctrl := startController(t)
	dead := startDockerRun(t, ctx, tag, proc.ControlledBy(ctrl.Process.Pid), false)
	killController(t, ctrl)

	report, err := Cleanup(ctx, false)
	if err != nil {
		t.Fatalf("cleanup: %v\n%s", err, strings.Join(report, "\n"))
	}
	t.Log(strings.Join(report, "\n"))
	for _, l := range report {
		if strings.Contains(l, live.id) {
			t.Errorf("cleanup touched the live run: %s", l)
		}
	}
	assertDockerRunGone(t, ctx, dead)
	rs, err := docker.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := findRun(rs, live.id); r == nil || len(r.Containers) != 1 || len(r.Networks) != 1 {
		t.Errorf("live run after cleanup: %+v; want its container and network", r)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", live.host.NS)); err != nil {
		t.Errorf("live run's namespace: %v", err)
	}
	if err := live.net.Close(ctx); err != nil {
		t.Errorf("live run's network close: %v", err)
	}
}

// startController is a stand-in controller process, killed by
// killController to make its run a leftover.
func startController(t *testing.T) *exec.Cmd {
	t.Helper()
	ctrl := exec.Command("sleep", "300")
	if err := ctrl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctrl.Process.Kill(); _ = ctrl.Wait() })
	return ctrl
}

func killController(t *testing.T, ctrl *exec.Cmd) {
	t.Helper()
	_ = ctrl.Process.Kill()
	_ = ctrl.Wait()
	if proc.Alive(ctrl.Process.Pid) {
		t.Fatalf("controller %d still alive", ctrl.Process.Pid)
	}
}

// assertDockerRunGone checks that nothing of run r is left: no container
// or network with its label, no namespace, veth or slot file of its slot,
// no forwarding rule of its bridge, and no bridge.
func assertDockerRunGone(t *testing.T, ctx context.Context, r *dockerRun) {
	t.Helper()
	rs, err := docker.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left := findRun(rs, r.id); left != nil {
		t.Errorf("docker leftovers of run %s: %+v", r.id, *left)
	}
	slots, err := netns.Slots()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if s.RunID == r.id || (s.Slot == r.net.Slot && len(s.Namespaces) > 0) {
			t.Errorf("slot %d left: %+v", s.Slot, s)
		}
	}
	links := ipOut(t, "-o", "link", "show")
	for _, l := range []string{r.nw.Bridge + ":", fmt.Sprintf("zk%dh", r.net.Slot)} {
		if strings.Contains(links, " "+l) {
			t.Errorf("link %s... left:\n%s", l, links)
		}
	}
	rules, err := exec.Command("iptables", "-S").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rules), " "+r.nw.Bridge+" ") {
		t.Errorf("iptables rules of %s left:\n%s", r.nw.Bridge, rules)
	}
}

// waitExec waits until pid runs the program named name (ip netns exec
// has exec'd it in the namespace).
func waitExec(t *testing.T, pid int, name string) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(5 * time.Millisecond) {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); filepath.Base(exe) == name {
			return
		}
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	t.Fatalf("pid %d runs %q (%v), not %s", pid, exe, err, name)
}

func findRun(rs []docker.Run, id string) *docker.Run {
	for i := range rs {
		if rs[i].ID == id {
			return &rs[i]
		}
	}
	return nil
}

func linkUp(t *testing.T, name string) bool {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link", "show", "dev", name).CombinedOutput()
	return err == nil && strings.Contains(string(out), ",UP")
}

func ipOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).Output()
	if err != nil {
		t.Fatalf("ip %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
