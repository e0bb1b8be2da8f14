package ssh

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	zkssh "github.com/zkchaos/zkchaos/cluster/ssh"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

func TestMain(m *testing.M) { chaostest.Main(m) }

// short are the settings of a short run: CI time matters.
func short(name string, extra ...string) []string {
	return append([]string{"--time-limit", "20s", "--nemesis-interval", "2s", "--seed", "7", "--name", name}, extra...)
}

// verifiedFaults counts the run's verified fault events by f, and logs
// every fault event.
func verifiedFaults(t *testing.T, dir string) map[string]int {
	t.Helper()
	verified := map[string]int{}
	for _, op := range chaostest.FaultOps(t, dir) {
		if op.Type == history.OK && op.Verified {
			verified[op.F]++
		}
		t.Logf("%s %s verified=%v took %s: %v %s", op.F, op.Type, op.Verified, op.Took.Round(time.Millisecond), op.Value.Detail, op.Err)
	}
	return verified
}

// assertClean checks that run dir left nothing on the hosts nor on this
// machine.
func assertClean(t *testing.T, r *chaostest.SSHRig, dir string) {
	t.Helper()
	left := r.LeftOnHosts(chaostest.ReadTest(t, dir).RunID)
	for _, l := range left {
		t.Error(l)
	}
	chaostest.AssertNothingLeft(t, dir)
	if t.Failed() {
		b, _ := os.ReadFile(filepath.Join(dir, store.LogFile))
		t.Logf("controller log:\n%s", chaostest.Tail(string(b), 6000))
	}
}

// TestSSH drives the ssh backend on the rig's three hosts: every fault
// fenced and valid, each server fault verified on the hosts, an unfenced
// run caught, and a controller SIGKILLed mid-partition whose hosts heal
// themselves.
//
// It is slow because it makes four real runs one after another (they
// share the rig's hosts and their ZooKeeper ports): 12 s with every fault
// drawn, 20 s with each server fault once, unfenced until its first
// violation, and one killed once its partition is verified, after which
// the hosts' watchdogs need their 5 s lease (zkssh.LeasePeriod) to heal.
// Every server verb goes over SSH and is verified on its host, so each
// run costs well beyond its workload (docs/measurements.md, "Backends,
// services, resources").
func TestSSH(t *testing.T) {
	chaostest.LongRun(t)
	r := chaostest.NewSSHRig(t)
	results := t.TempDir()

	t.Run("fenced all valid", func(t *testing.T) {
		start := time.Now()
		res := chaostest.Run(t, results, append(r.Args(), short("ssh-all", "--nemesis", "all", "--fencing", "on", "--time-limit", "12s")...)...)
		t.Logf("fenced --nemesis all: exit %d in %s", res.Code, time.Since(start).Round(time.Second))
		if res.Code != 0 {
			t.Fatalf("exit %d, want 0 (valid)\n%s", res.Code, chaostest.Tail(res.Stderr, 3000))
		}
		verified := verifiedFaults(t, res.Dir)
		t.Logf("verified faults: %v", verified)
		if len(verified) == 0 {
			t.Error("no verified fault in the history")
		}
		for i := 1; i <= 3; i++ {
			b, err := os.ReadFile(fmt.Sprintf("%s/zk/n%d/zk.log", res.Dir, i))
			if err != nil || !strings.Contains(string(b), "QuorumPeer") {
				t.Errorf("server log n%d not fetched into the run folder (%d bytes, %v)", i, len(b), err)
			}
		}
		assertClean(t, r, res.Dir)
	})
	// The three server faults in one run that injects each exactly once
	// (chaostest.Sequence), so that none is missed as a draw could miss
	// it; each is verified on its host.
	t.Run("server faults", func(t *testing.T) {
		sched := chaostest.Sequence(t, 2*time.Second, "pause-zk", "kill-zk", "partition-zk-ring")
		res := chaostest.Run(t, results, append(r.Args(), append(sched, "--fencing", "on", "--seed", "7", "--name", "ssh-server-faults")...)...)
		if res.Code != 0 {
			t.Fatalf("exit %d, want 0 (valid)\n%s", res.Code, chaostest.Tail(res.Stderr, 3000))
		}
		verified := verifiedFaults(t, res.Dir)
		for _, f := range []string{history.FPause, history.FResume, history.FKill, history.FRestart, history.FPartition, history.FHeal} {
			if verified[f] != 1 {
				t.Errorf("%d verified %s on the hosts, want 1 (verified: %v)", verified[f], f, verified)
			}
		}
		assertClean(t, r, res.Dir)
	})
	t.Run("unfenced pause-holder caught", func(t *testing.T) {
		res := chaostest.Run(t, results, append(r.Args(), append(short("ssh-unfenced", "--nemesis", "pause-holder", "--fencing", "off"), chaostest.UntilViolation()...)...)...)
		if res.Code != 1 {
			t.Fatalf("exit %d, want 1 (invalid)\n%s", res.Code, chaostest.Tail(res.Stderr, 3000))
		}
		rs := chaostest.ReadResults(t, res.Dir)
		if dw, ok := rs.Checkers["double-writer"]; !ok || dw.Valid != false {
			t.Errorf("double-writer %+v, want false", dw)
		}
		assertClean(t, r, res.Dir)
	})
	t.Run("controller killed mid-partition", func(t *testing.T) {
		cmd, _, stderr := chaostest.Start(t, append(append([]string{"run", "--results", results}, r.Args()...),
			short("ssh-killed", "--nemesis", "partition-zk-halves", "--pause", "60s", "--time-limit", "90s")...)...)
		dir := chaostest.WaitForRun(t, results, stderr, "verified partition", func(dir string) bool {
			e := chaostest.LastNemesis(dir)
			return e != nil && e.F == history.FPartition && e.Type == history.OK && chaostest.Verified(e)
		})
		runID := chaostest.ReadTest(t, dir).RunID
		before := r.LeftOnHosts(runID)
		rules := 0
		for _, l := range before {
			if strings.Contains(l, ": iptables -A ZKCHAOS-") {
				rules++
			}
		}
		if rules == 0 {
			t.Fatalf("a verified partition, but no DROP rule of the run on any host:\n%s", strings.Join(before, "\n"))
		}
		t.Logf("before the SIGKILL: %d rules and %d other things of the run on the hosts", rules, len(before)-rules)
		chaostest.Crash(t, cmd)
		killed := time.Now()
		var left []string
		for deadline := killed.Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if left = r.LeftOnHosts(runID); len(left) == 0 {
				break
			}
		}
		if len(left) > 0 {
			t.Fatalf("20s after the controller's SIGKILL, on the hosts:\n%s", strings.Join(left, "\n"))
		}
		t.Logf("hosts healed %s after the controller's SIGKILL (lease 5s)", time.Since(killed).Round(100*time.Millisecond))
		waitJanitor(t, dir)
	})
}

// waitJanitor waits until the killed run's janitor has removed what the
// run left on this machine, then checks it.
func waitJanitor(t *testing.T, dir string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if chaostest.JanitorPID(chaostest.ReadTest(t, dir).RunID) == 0 {
			break
		}
	}
	chaostest.AssertNothingLeft(t, dir)
}

// TestSSHErrors: each host problem refuses the run before anything is
// made, exit 255, the first line of stderr naming the host and what is
// wrong; nothing is left on the hosts that were fine.
func TestSSHErrors(t *testing.T) {
	r := chaostest.NewSSHRig(t)
	good := r.HostList()
	base := func(hosts, key, known string, extra ...string) []string {
		return append([]string{"--cluster", "ssh", "--hosts", hosts, "--ssh-user", r.User, "--ssh-key", key, "--ssh-known-hosts", known,
			"--time-limit", "5s"}, extra...)
	}
	empty := t.TempDir() + "/known_hosts"
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h1 := r.Hosts[0].IP
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"unreachable", base(good+","+r.Dead.IP, r.Key, r.KnownHosts), []string{"host " + r.Dead.IP + ":", "unreachable"}},
		{"wrong key", base(good, r.WrongKey, r.KnownHosts), []string{"host " + h1 + ":", "key refused"}},
		{"unknown host key", base(good, r.Key, empty), []string{"host " + h1 + ":", "host key not in " + empty}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { refused(t, r, c.args, c.want) })
	}
	// A host without the ZooKeeper jars: refused naming what it lacks;
	// with --install the backend tries apt-get through sudo -n, which
	// the rig's user may not (its one right is iptables), and says so.
	bare := r.AddBareHost(t).IP
	lacking := base(good+","+bare, r.Key, r.KnownHosts)
	t.Run("missing package", func(t *testing.T) {
		refused(t, r, lacking, []string{"host " + bare + ":", "missing: /usr/share/java/zookeeper.jar", "--install installs them"})
	})
	t.Run("install without the apt-get right", func(t *testing.T) {
		refused(t, r, append(lacking, "--install"), []string{"host " + bare + ":", "apt-get install libzookeeper-java", "failed"})
	})
	t.Run("no sudo", func(t *testing.T) {
		user := chaostest.AddUser(t, "zkcnosudo")
		args := base(good, r.Key, r.KnownHosts)
		args[5] = user
		refused(t, r, args, []string{"host " + h1 + ":", "user " + user + " may not run iptables as root without a password"})
	})
}

// refused runs chaos run with args and checks that it was refused as
// want says, leaving nothing anywhere.
func refused(t *testing.T, r *chaostest.SSHRig, args, want []string) {
	t.Helper()
	start := time.Now()
	res := chaostest.Run(t, t.TempDir(), args...)
	first, _, _ := strings.Cut(strings.TrimSpace(res.Stderr), "\n")
	t.Logf("exit %d in %s: %s", res.Code, time.Since(start).Round(time.Millisecond), first)
	if res.Code != 255 {
		t.Errorf("exit %d, want 255\n%s", res.Code, chaostest.Tail(res.Stderr, 2000))
	}
	for _, w := range want {
		if !strings.Contains(first, w) {
			t.Errorf("first stderr line lacks %q: %s", w, first)
		}
	}
	if res.Dir != "" {
		t.Errorf("a run folder was made: %s", res.Dir)
	}
	for _, l := range r.LeftOnHosts("") {
		t.Error(l)
	}
}

// TestSSHAgent: without --ssh-key the key comes from the agent at
// SSH_AUTH_SOCK (a real ssh-agent the test starts): the rig's key loaded,
// every host is reached and passes the checks; an agent without it is
// refused, naming the host.
func TestSSHAgent(t *testing.T) {
	r := chaostest.NewSSHRig(t)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agent.Process.Kill()
		_ = agent.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitFile(ctx, sock); err != nil {
		t.Fatalf("ssh-agent socket: %v", err)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	hosts := strings.Split(r.HostList(), ",")
	auth := zkssh.Auth{User: r.User, KnownHosts: r.KnownHosts}
	err := zkssh.Reach(ctx, hosts, auth, false)
	if err == nil || !strings.Contains(err.Error(), "key refused") {
		t.Errorf("an agent without the key: %v, want every host refusing it", err)
	}
	if out, err := exec.Command("ssh-add", "-q", r.Key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v\n%s", err, out)
	}
	start := time.Now()
	if err := zkssh.Reach(ctx, hosts, auth, false); err != nil {
		t.Fatalf("the agent holds the key: %v", err)
	}
	t.Logf("three hosts reached and checked through the agent's key in %s", time.Since(start).Round(time.Millisecond))
	for _, l := range r.LeftOnHosts("") {
		t.Error(l)
	}
}

func waitFile(ctx context.Context, path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
