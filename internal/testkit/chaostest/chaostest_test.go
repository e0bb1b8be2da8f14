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

// free counts the tokens in dir that another holder could take now.
func free(t *testing.T) int {
	t.Helper()
	n := 0
	for i := 0; i < Tokens; i++ {
		f, ok, err := tryToken(i)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			n++
			f.Close()
		}
	}
	return n
}

// TestRunTokens: a test holds one token (its subtests run under it), a
// test of n runs holds n, and both give them back when they end.
func TestRunTokens(t *testing.T) {
	defer func(d string, n int) { tokenDir, Tokens = d, n }(tokenDir, Tokens)
	tokenDir, Tokens = t.TempDir(), 3
	t.Run("one", func(t *testing.T) {
		holdRuns(t, 1)
		t.Run("nested", func(t *testing.T) {
			holdRuns(t, 2)
			if got := free(t); got != 2 {
				t.Errorf("a subtest took tokens of its own: %d free, want 2", got)
			}
		})
		if got := free(t); got != 2 {
			t.Errorf("%d free while a test holds one, want 2", got)
		}
	})
	t.Run("two", func(t *testing.T) {
		holdRuns(t, 2)
		if got := free(t); got != 1 {
			t.Errorf("%d free while a test holds two, want 1", got)
		}
	})
	if got := free(t); got != 3 {
		t.Errorf("%d free after the tests ended, want all 3", got)
	}
}

// allHeld points the tokens at a folder of t's, two of them, and takes
// both.
func allHeld(t *testing.T) []*os.File {
	d, n := tokenDir, Tokens
	t.Cleanup(func() { tokenDir, Tokens = d, n })
	tokenDir, Tokens = t.TempDir(), 2
	held, err := takeTokens(2, false)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// takeLater takes one token (first: as a long test's taker) in the
// background and hands it over once it has it.
func takeLater(t *testing.T, first bool) <-chan []*os.File {
	got := make(chan []*os.File, 1)
	go func() {
		fs, err := takeTokens(1, first)
		if err != nil {
			t.Error(err)
		}
		got <- fs
	}()
	return got
}

// TestRunTokensWait: a taker waits while every token is held and goes on
// once one is given back.
func TestRunTokensWait(t *testing.T) {
	held := allHeld(t)
	got := takeLater(t, false)
	select {
	case <-got:
		t.Fatal("took a token while all were held")
	case <-time.After(300 * time.Millisecond):
	}
	held[1].Close()
	select {
	case fs := <-got:
		fs[0].Close()
	case <-time.After(10 * time.Second):
		t.Fatal("no token within 10 s of one being given back")
	}
	held[0].Close()
}

// TestRunTokensLongFirst: while a long test's taker (LongRun) waits,
// a short test's takes no token, not even a free one, and it takes one
// once the long one has; another long test's taker is not held back.
func TestRunTokensLongFirst(t *testing.T) {
	held := allHeld(t)
	longGot := takeLater(t, true)
	// A second long test waiting beside the first: it shows itself as
	// the first does, and both wait on the tokens alone.
	other, err := flockFile(firstPath(), syscall.LOCK_SH)
	if err != nil {
		t.Fatal(err)
	}
	held[1].Close()
	var long []*os.File
	select {
	case long = <-longGot:
	case <-time.After(10 * time.Second):
		t.Fatal("a long test's taker took no token within 10 s of one being given back")
	}
	long[0].Close() // token 1 is free again, and a long test still waits
	shortGot := takeLater(t, false)
	select {
	case <-shortGot:
		t.Fatal("a short test's taker took a free token while a long test's waited")
	case <-time.After(500 * time.Millisecond):
	}
	other.Close()
	select {
	case fs := <-shortGot:
		fs[0].Close()
	case <-time.After(10 * time.Second):
		t.Fatal("a short test's taker took no free token within 10 s of the long ones' end")
	}
	held[0].Close()
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
	// leftovers would wait for the lock held here: judge the slot as it
	// does under the lock.
	slots, err := netns.Slots()
	if err != nil {
		t.Fatal(err)
	}
	info := netns.SlotInfo{Slot: top}
	for _, s := range slots {
		if s.Slot == top {
			info = s
		}
	}
	if left := fileless(run, info); len(left) != 1 || !strings.Contains(left[0], "without its slot file") {
		t.Errorf("leftovers of slot %d with a namespace and no slot file: %q; want one, without its slot file", top, left)
	}
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
	left, err := Leftovers(run, slot)
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

// TestBuildInUseStays: a build folder that a test process runs from (a
// shared flock on its useLock) is not removed when another build replaces
// it; one that nobody uses, or one without the lock file, is.
func TestBuildInUseStays(t *testing.T) {
	bin := t.TempDir()
	used, unused, bare := filepath.Join(bin, "test-a"), filepath.Join(bin, "test-b"), filepath.Join(bin, "test-c")
	for _, d := range []string{used, unused, bare} {
		if err := os.MkdirAll(filepath.Join(d, "proc-1"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{used, unused} {
		if err := os.WriteFile(filepath.Join(d, useLock), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := flockFile(filepath.Join(used, useLock), syscall.LOCK_SH)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, d := range []string{used, unused, bare} {
		removeUnused(d)
	}
	if _, err := os.Stat(filepath.Join(used, "proc-1")); err != nil {
		t.Errorf("the folder in use was removed: %v", err)
	}
	for _, d := range []string{unused, bare} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s stays (%v); want it removed", d, err)
		}
	}
}

// TestPrebuiltTakenWhenNewer: the binaries make test has just built are
// taken when newer than every source file, and built afresh when a
// source is newer (an edit after the build) or one is missing.
func TestPrebuiltTakenWhenNewer(t *testing.T) {
	from := t.TempDir()
	for _, name := range binaries {
		if err := os.WriteFile(filepath.Join(from, name), []byte(name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(Prebuilt, from)
	dir := t.TempDir()
	if !takePrebuilt(dir, time.Now().Add(-time.Minute)) {
		t.Fatal("binaries newer than every source not taken")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "chaos-worker")); err != nil || string(b) != "chaos-worker" {
		t.Errorf("taken worker: %q, %v", b, err)
	}
	if takePrebuilt(t.TempDir(), time.Now().Add(time.Minute)) {
		t.Error("binaries older than a source taken")
	}
	os.Remove(filepath.Join(from, binaries[len(binaries)-1]))
	if takePrebuilt(t.TempDir(), time.Now().Add(-time.Minute)) {
		t.Error("taken with a binary missing")
	}
	t.Setenv(Prebuilt, "")
	if takePrebuilt(t.TempDir(), time.Time{}) {
		t.Error("taken with no folder named")
	}
}
