package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/workerproc"
)

// TestIsolateHealBoundedByXtablesLock: a heal of isolate-holder whose
// iptables waits for an xtables lock that someone else holds returns
// within its bound, is recorded as timed out, and leaves its rules to the
// final restore, which removes them once the lock is free.
//
// iptables-nft (this host's default) takes no lock; iptables-legacy takes
// it on every call, as on hosts where iptables is the legacy variant. The
// test therefore runs the real isolate-holder fault with iptables-legacy
// first on PATH and its lock file moved to a private path
// (XTABLES_LOCKFILE), so holding the lock blocks no one else. The lock is
// held by flock(1), as iptables itself takes it.
func TestIsolateHealBoundedByXtablesLock(t *testing.T) {
	if testing.Short() {
		t.Skip("real namespaces and iptables")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces")
	}
	legacy, err := exec.LookPath("iptables-legacy")
	if err != nil {
		t.Skip("no iptables-legacy")
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	if err := os.Symlink(legacy, filepath.Join(dir, "iptables")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	lock := filepath.Join(dir, "xtables.lock")
	t.Setenv("XTABLES_LOCKFILE", lock)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := fmt.Sprintf("zkctest-lock-%d", os.Getpid())
	mustRun(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	mustRun(t, "ip", "netns", "exec", ns, "iptables", "-N", "ZKCHAOS")
	host := &netns.Host{Name: "w", NS: ns}

	// The server address only names the rules (the namespace has no
	// interface but lo); on port 1 nothing answers the session watch.
	const server = "127.0.0.1"
	w := Worker{Process: 4, PID: os.Getpid(), Holding: true, Key: "k", Token: 1, Session: 0x42, Proc: workerproc.New(os.Getpid(), host)}
	targets := &oneWorker{w: w}
	h := history.NewMemory()
	const bound = 2 * time.Second
	s, err := newScheduler(Config{History: h, Schedule: Schedule{UndoTimeout: bound},
		Env: Env{Cluster: connectOnly(server + ":1"), Targets: targets, Rand: rand.New(rand.NewPCG(1, 1))}},
		[]string{"isolate-holder"}, []Fault{isolateHolder{}})
	if err != nil {
		t.Fatal(err)
	}
	s.injectOne(ctx, "isolate-holder", isolateHolder{}, 0)
	if ops := nemesisOps(h); len(ops) != 2 || ops[1].Type != history.OK {
		t.Fatalf("isolate not in effect:%s", opsText(ops))
	}

	// flock runs sleep with the lock's descriptor: both go, as a group.
	holder := exec.Command("flock", lock, "sleep", "30")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(func() {
		_ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
		_ = holder.Wait()
	})
	t.Cleanup(release)
	waitFor(t, func() bool { return exec.Command("flock", "-n", lock, "true").Run() != nil })

	start := time.Now()
	s.Heal(ctx)
	took := time.Since(start)
	if took > bound+cutGrace+time.Second {
		t.Fatalf("heal took %s with a %s bound", took, bound)
	}
	ops := nemesisOps(h)
	last := ops[len(ops)-1]
	if last.F != history.FHeal || last.Type != history.Info || !strings.Contains(last.Error, "undo timed out after 2s") {
		t.Fatalf("want the heal recorded info, timed out after 2s:%s", opsText(ops))
	}
	if v := last.Value; v.Verified == nil || *v.Verified || v.TargetProcess == nil || *v.TargetProcess != 4 {
		t.Errorf("heal record %+v: want verified false, target process 4", *v)
	}
	t.Logf("heal returned after %s: %s", took.Round(time.Millisecond), last.Error)

	// What the final restore does (run/runner/final.go) once the lock is free:
	// list the host's rules, flush them, and find none left.
	release()
	rules, err := host.Rules(ctx)
	if err != nil || len(rules) != 2 {
		t.Fatalf("before the restore: rules %q, %v; want the 2 DROP rules the timed-out heal left", rules, err)
	}
	if err := host.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if rules, err := host.Rules(ctx); err != nil || len(rules) != 0 {
		t.Fatalf("after the restore: rules %q, %v", rules, err)
	}
}

func mustRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// oneWorker is the fleet's view with one worker holding a lock, which
// reports its session disconnected as soon as it is cut off.
type oneWorker struct{ w Worker }

func (o *oneWorker) Holders() []Holder {
	return []Holder{{Process: o.w.Process, PID: o.w.PID, Key: o.w.Key, Token: o.w.Token}}
}
func (o *oneWorker) Workers() []Worker                  { return []Worker{o.w} }
func (o *oneWorker) SessionState(_ int, _ int64) string { return "disconnected" }

// connectOnly is an ensemble known only by its connect string: all the
// isolate fault asks of it.
type connectOnly string

func (connectOnly) Nodes() []cluster.Node           { return nil }
func (c connectOnly) ConnectString() string         { return string(c) }
func (connectOnly) WaitReady(context.Context) error { return nil }
func (connectOnly) Start(context.Context) error     { return nil }
func (connectOnly) Capabilities() cluster.Capabilities {
	return cluster.Capabilities{Backend: "connect-only"}
}
func (connectOnly) Restore(context.Context) ([]string, error) { return nil, nil }
func (connectOnly) Close(context.Context) error               { return nil }
