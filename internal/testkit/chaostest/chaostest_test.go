package chaostest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
)

// canTake reports whether another holder could take the machine lock in
// mode right now.
func canTake(t *testing.T, mode lockMode) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(machineDir, machineLock), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), int(mode)|syscall.LOCK_NB) == nil
}

// TestMachineLock: ensemble tests share the lock (a subtest shares its
// parent's hold), a test alone excludes them, and both release it when
// they end.
func TestMachineLock(t *testing.T) {
	defer func(d string) { machineDir = d }(machineDir)
	machineDir = t.TempDir()
	t.Run("shared", func(t *testing.T) {
		holdMachine(t, shared)
		t.Run("nested", func(t *testing.T) { holdMachine(t, shared) })
		if canTake(t, exclusive) {
			t.Error("the machine alone while an ensemble test holds it")
		}
		if !canTake(t, shared) {
			t.Error("another ensemble test refused while one holds it")
		}
	})
	if !canTake(t, exclusive) {
		t.Error("shared hold not released when its test ended")
	}
	t.Run("alone", func(t *testing.T) {
		holdMachine(t, exclusive)
		if canTake(t, shared) {
			t.Error("an ensemble test could start while a test has the machine alone")
		}
	})
	if !canTake(t, exclusive) {
		t.Error("exclusive hold not released when its test ended")
	}
}

// TestMachineLockWriterFirst: a test waiting for the machine alone goes
// before ensemble tests that ask after it, so another package starting
// test after test cannot keep it waiting to its end.
func TestMachineLockWriterFirst(t *testing.T) {
	defer func(d string) { machineDir = d }(machineDir)
	machineDir = t.TempDir()
	first, err := takeMachine(shared)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	writer := make(chan *os.File, 1)
	go func() {
		f, err := takeMachine(exclusive)
		if err != nil {
			t.Error(err)
		}
		order <- "alone"
		writer <- f
	}()
	waitUntil(t, "the writer to wait at the gate", func() bool { return !canTakeGate(t) })
	go func() {
		f, err := takeMachine(shared)
		if err != nil {
			t.Error(err)
		}
		order <- "shared"
		f.Close()
	}()
	time.Sleep(100 * time.Millisecond) // the reader queues behind the writer
	first.Close()
	if got := <-order; got != "alone" {
		t.Fatalf("%s went first, want the test that asked for the machine alone", got)
	}
	(<-writer).Close()
	if got := <-order; got != "shared" {
		t.Fatalf("got %s", got)
	}
}

func canTakeGate(t *testing.T) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(machineDir, machineGate), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
	}
}

// TestRunSlot reads the slot from a controller log line as the runner
// writes it, and -1 from a loopback run's log.
func TestRunSlot(t *testing.T) {
	dir := t.TempDir()
	log := `time=2026-01-01T00:00:00Z level=INFO msg="run starting" dir=/r run_id=ab12cd34 seed=1
time=2026-01-01T00:00:00Z level=INFO msg="network created" slot=13 bridge=zkc13 gateway=198.18.3.65 prefix=198.18.3.64/28
`
	if err := os.WriteFile(filepath.Join(dir, "controller.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := RunSlot(dir); s != 13 {
		t.Errorf("RunSlot = %d, want 13", s)
	}
	if err := os.WriteFile(filepath.Join(dir, "controller.log"), []byte(strings.SplitAfter(log, "\n")[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := RunSlot(dir); s != -1 {
		t.Errorf("RunSlot of a run without a network = %d, want -1", s)
	}
}

// TestLeftovers: what a run leaves is found (a tagged process, a slot
// whose file names it, a namespace of its slot without a slot file), and
// once removed, nothing is reported.
func TestLeftovers(t *testing.T) {
	run := "chaostest-left"
	sleeper := exec.Command("sleep", "60")
	sleeper.Env = append(os.Environ(), proc.Env(run, proc.Self())...)
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	assertLeft(t, run, -1, "process ")
	_ = sleeper.Process.Kill()
	_ = sleeper.Wait()
	assertLeft(t, run, -1)

	if testing.Short() {
		t.Skip("the network part claims a real slot: skipped with -short")
	}
	if os.Geteuid() != 0 || netns.Available() != nil {
		t.Skip("the network part needs root and network namespaces")
	}
	ctx := context.Background()
	n, err := netns.Create(ctx, run, proc.Self(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(ctx) })
	assertLeft(t, run, n.Slot, "network slot ")
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertLeft(t, run, n.Slot)

	// The top slot: taken only when every other one is, so no run of a
	// parallel test package claims it while this test makes it dirty;
	// and under its lock, which every sweep takes, so that no run's start
	// sweeps it meanwhile.
	top := netns.MaxSlots - 1
	unlock := lockSlot(t, top)
	defer unlock()
	ns := "zkc" + strconv.Itoa(top) + "-chaostest"
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", ns, err, out)
	}
	defer func() { _ = exec.Command("ip", "netns", "del", ns).Run() }()
	assertLeft(t, run, top, "without its slot file")
}

// lockSlot takes slot s's lock (host/netns's protocol: an exclusive flock
// on its lock file) until the returned unlock.
func lockSlot(t *testing.T, s int) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(netns.StateDir, "slot-"+strconv.Itoa(s)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// assertLeft checks that leftovers reports exactly one line containing
// want, or none when want is not given.
func assertLeft(t *testing.T, run string, slot int, want ...string) {
	t.Helper()
	left, err := leftovers(run, slot)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != len(want) {
		t.Fatalf("leftovers of %s on slot %d: %q, want %d matching %q", run, slot, left, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(left[i], w) {
			t.Errorf("leftover %q does not say %q", left[i], w)
		}
	}
}
