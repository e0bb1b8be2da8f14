package workloads

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// TestElectionStalls: a correct, fenced election run stays valid when the
// machine stalls its parts, which load does at random and this test does
// on purpose. The controller is stopped (SIGSTOP) for 0.7 s four times
// while tasks run: what it records must still explain every entry of the
// apply log. Then the register is stopped for 7 s, longer than a worker's
// register timeout: the leader's call in flight times out and is sent
// again under the same term, the register applies both copies when it
// resumes, and the integrity check must attribute the copy to the one
// invocation (as the protocol allows), not call the run unknown. The
// stalls start at the first completed task and take 11 s; the run's 25
// s leave room for a first task that comes late on a loaded machine
// (with 15 s the register's stall once outlasted the workload, and no
// call was retried).
func TestElectionStalls(t *testing.T) {
	chaostest.LongRun(t)
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	cmd, stdout, stderr := chaostest.Start(t, append([]string{"run", "--results", results, "--name", "stalls", "--workload", "election",
		"--nemesis", "none", "--fencing", "on", "--time-limit", "25s", "--seed", "5"}, chaostest.OneServer()...)...)
	dir := chaostest.WaitForRun(t, results, stderr, "complete in the history", func(dir string) bool {
		b, _ := os.ReadFile(filepath.Join(dir, "history.jsonl"))
		return bytes.Contains(b, []byte(`"f":"complete"`))
	})
	ctrl := cmd.Process.Pid
	for range 4 {
		stall(t, ctrl, 700*time.Millisecond)
		time.Sleep(300 * time.Millisecond)
	}
	reg := childWith(t, ctrl, "register")
	stall(t, reg, 7*time.Second)
	err := cmd.Wait()
	if code := chaostest.ExitOf(err); code != 0 || !strings.Contains(stdout.String(), "integrity      true") {
		t.Fatalf("exit %d; want 0 with integrity true\nstdout: %s\nstderr: %s", code, stdout, chaostest.Tail(stderr.String(), 2000))
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "workers", "*.log"))
	retried := false
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		retried = retried || bytes.Contains(b, []byte("reply lost, retrying"))
	}
	if !retried {
		t.Fatal("the register's stall made no worker retry a task call: the run did not test what it is for")
	}
	chaostest.AssertNothingLeft(t, dir)
}

// stall stops pid for d, then lets it go on; it is let go on even when
// the test fails in between.
func stall(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop %d: %v", pid, err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	time.Sleep(d)
}

// childWith is the PID of parent's child whose command line holds word.
func childWith(t *testing.T, parent int, word string) int {
	t.Helper()
	kids, err := proc.Children(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range kids {
		args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.Contains(args, []byte("\x00"+word+"\x00")) {
			return pid
		}
	}
	t.Fatalf("no child of %d runs %q", parent, word)
	return 0
}
