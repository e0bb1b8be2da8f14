package chaostest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/proc"
)

// KillWholeRun SIGKILLs every process of run runID, as a CI timeout or a
// cgroup kill ends a job: the janitor first so that it cannot begin its
// sweep, then the controller so that it starts nothing more, then every
// process carrying the run's tag (found after the controller's death, so
// that a child it was starting is among them). It reaps the controller,
// waits until each killed process is gone and returns how many it
// killed. A janitor not started yet, or no tagged process, is fine: a
// run may die that early.
func KillWholeRun(t *testing.T, controller *exec.Cmd, runID string) int {
	t.Helper()
	var pids []int
	if jan := JanitorPID(runID); jan != 0 {
		pids = append(pids, jan)
		_ = syscall.Kill(jan, syscall.SIGKILL)
	}
	pids = append(pids, controller.Process.Pid)
	_ = controller.Process.Signal(syscall.SIGKILL)
	_ = controller.Wait()
	tagged, err := proc.FindTagged(runID)
	if err != nil {
		t.Fatalf("find the processes of run %s: %v", runID, err)
	}
	for _, p := range tagged {
		pids = append(pids, p.PID)
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	for _, p := range pids {
		for deadline := time.Now().Add(5 * time.Second); proc.Alive(p); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d of run %s alive 5 s after SIGKILL", p, runID)
			}
		}
	}
	return len(pids)
}

// KillControllerAndJanitor SIGKILLs the run's janitor (when it runs) and
// its controller together and reaps the controller: nobody is left to
// clean up, and the run's workers, servers and register live on until a
// sweep. It reports whether a janitor was there to kill.
func KillControllerAndJanitor(t *testing.T, controller *exec.Cmd, runID string) bool {
	t.Helper()
	jan := JanitorPID(runID)
	if jan != 0 {
		_ = syscall.Kill(jan, syscall.SIGKILL)
	}
	Crash(t, controller)
	for deadline := time.Now().Add(5 * time.Second); jan != 0 && proc.Alive(jan); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("janitor %d of run %s alive 5 s after SIGKILL", jan, runID)
		}
	}
	return jan != 0
}

// RunID is the run id the controller log of the run in dir names in its
// first line ("run starting ... run_id=..."), "" before it is written.
// test.json says it too, but only once the run's network exists: a run
// killed earlier has only its log.
func RunID(dir string) string {
	f, err := os.Open(filepath.Join(dir, store.LogFile))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 0; i < 5 && sc.Scan(); i++ {
		for _, w := range strings.Fields(sc.Text()) {
			if id, ok := strings.CutPrefix(w, "run_id="); ok {
				return id
			}
		}
	}
	return ""
}

// AwaitClean waits until nothing of run runID is left on the machine
// (AssertRunLeftNothing's view, on network slot slot, -1 for none) and
// in what each of more reports (dockertest.Left, a backend's own), or
// until bound has passed. It returns what is left then (nothing when the
// wait ended clean) and how long it waited; the caller judges.
func AwaitClean(runID string, slot int, bound time.Duration, more ...func() []string) ([]string, time.Duration) {
	start := time.Now()
	for {
		left, err := Leftovers(runID, slot)
		if err != nil {
			left = append(left, "leftovers not readable: "+err.Error())
		}
		for _, m := range more {
			left = append(left, m()...)
		}
		if len(left) == 0 || time.Since(start) > bound {
			return left, time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
