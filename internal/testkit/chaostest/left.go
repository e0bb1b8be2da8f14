package chaostest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
)

// AssertNothingLeft checks that the run in folder dir left nothing behind:
// see AssertRunLeftNothing. It finds the run's id in test.json and its
// network slot in its controller log; a run in network namespaces whose
// log names no slot fails the test, as the network check would otherwise
// pass by checking nothing.
func AssertNothingLeft(t *testing.T, dir string) {
	t.Helper()
	tf, slot := ReadTest(t, dir), RunSlot(dir)
	if tf.NetMode == "netns" && slot < 0 {
		t.Errorf("run %s ran in network namespaces but its %s names no slot", tf.RunID, store.LogFile)
	}
	AssertRunLeftNothing(t, tf.RunID, slot)
}

// AwaitNothingLeft is AssertNothingLeft after a crash: the janitor sweeps
// the dead run in the background, so it checks until nothing is left or
// within has passed, then reports what is still there. The bound is
// generous on purpose: a loaded machine delays the sweep, and what the
// test proves is that nothing stays, not how fast a busy machine is. The
// time it took is logged.
func AwaitNothingLeft(t *testing.T, dir string, within time.Duration) {
	t.Helper()
	tf, slot := ReadTest(t, dir), RunSlot(dir)
	if tf.NetMode == "netns" && slot < 0 {
		t.Errorf("run %s ran in network namespaces but its %s names no slot", tf.RunID, store.LogFile)
	}
	start := time.Now()
	for {
		left, err := Leftovers(tf.RunID, slot)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			t.Logf("nothing of run %s left after %s", tf.RunID, time.Since(start).Round(10*time.Millisecond))
			return
		}
		if time.Since(start) > within {
			for _, l := range left {
				t.Errorf("%s (after %s)", l, within)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// AssertRunLeftNothing checks that no process of run runID exists (none
// stopped, none running) and, as root, that nothing of its network is
// left: no slot file naming it and, on the slot it used (slot; -1 for
// none), no namespace, bridge or FORWARD rule, unless another run has
// claimed the slot since (those are then that run's).
//
// It judges only this run. Other test packages run at the same time, and
// at any moment one of their runs may be claiming a slot, or be dead with
// its janitor still sweeping: a check of every slot on the machine would
// fail them as ours.
func AssertRunLeftNothing(t *testing.T, runID string, slot int) {
	t.Helper()
	left, err := Leftovers(runID, slot)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		t.Error(l)
	}
}

// Leftovers lists what is left of run runID on slot, one line each: what
// AssertRunLeftNothing reports.
func Leftovers(runID string, slot int) ([]string, error) {
	var left []string
	tagged, err := proc.FindTagged(runID)
	if err != nil {
		return nil, err
	}
	for _, p := range tagged {
		st, _ := proc.State(p.PID)
		left = append(left, fmt.Sprintf("process %d of run %s still exists (state %c)", p.PID, runID, st))
	}
	if os.Geteuid() != 0 {
		return left, nil
	}
	slots, err := netns.Slots()
	if err != nil {
		return nil, err
	}
	for _, s := range slots {
		if s.RunID == runID {
			left = append(left, fmt.Sprintf("network slot %d of run %s left: %+v", s.Slot, runID, s))
		}
	}
	if slot < 0 {
		return left, nil
	}
	// Under the slot's lock no claim or sweep is half done: a slot without
	// a slot file then has nothing of any run, and what is there is left.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = netns.InspectSlot(ctx, slot, func(s netns.SlotInfo) error {
		left = append(left, fileless(runID, s)...)
		return nil
	})
	return left, err
}

// fileless lists what exists of slot s, seen under its lock, when it has
// no slot file (with one, it belongs to whom the file names).
func fileless(runID string, s netns.SlotInfo) []string {
	if s.HasFile {
		return nil
	}
	var left []string
	if s.HasBridge || len(s.Namespaces) > 0 {
		left = append(left, fmt.Sprintf("network slot %d of run %s left without its slot file: %+v", s.Slot, runID, s))
	}
	for _, r := range forwardRules(s.Slot) {
		left = append(left, "FORWARD rule left: "+r)
	}
	return left
}

// forwardRules are the rules of slot s's bridge in the harness's FORWARD
// chain.
func forwardRules(s int) []string {
	out, _ := exec.Command("iptables", "-w", "-S", netns.FwdChain).CombinedOutput()
	var rules []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "-A "+netns.FwdChain) && strings.Contains(line+" ", "zkc"+strconv.Itoa(s)+" ") {
			rules = append(rules, line)
		}
	}
	return rules
}

// JanitorPID is the PID of `chaos janitor --run runID`, found by its
// command line (the janitor carries no run tag: it must outlive the
// sweep of its run's tagged processes), or 0 when there is none.
func JanitorPID(runID string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		for i := 0; i+2 < len(args); i++ {
			if args[i] == "janitor" && args[i+1] == "--run" && args[i+2] == runID {
				return pid
			}
		}
	}
	return 0
}

// AssertNothingStarted checks that the controller pid left nothing: no
// process tagged with it, no process of this binary (a janitor or
// register) or of the built-in worker, no network slot naming it: what a
// refused run (bad input, exit 255) must leave.
func AssertNothingStarted(t *testing.T, pid int) {
	t.Helper()
	tagged, err := proc.FindTagged("")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tagged {
		if p.Owners.Controller.PID == pid {
			t.Errorf("process %d of the refused run (controller %d) exists", p.PID, pid)
		}
	}
	var exes []string
	for _, name := range binaries {
		exe, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(Binary(t)), name))
		if err != nil {
			t.Fatal(err)
		}
		exes = append(exes, exe)
	}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil || p == os.Getpid() {
			continue
		}
		if e, err := os.Readlink("/proc/" + d.Name() + "/exe"); err == nil && slices.Contains(exes, e) && proc.Alive(p) {
			t.Errorf("process %d of %s is running after a refused run", p, e)
		}
	}
	if netns.Available() != nil {
		return
	}
	slots, err := netns.Slots()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if s.ControllerPID == pid {
			t.Errorf("network slot %d taken by the refused run: %+v", s.Slot, s)
		}
	}
}
