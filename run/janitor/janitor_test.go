package janitor

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
)

// TestServeSweepsOnEOF: when the controller's pipe closes without "done",
// the janitor resumes and kills every tagged process of the run, inside a
// namespace of the run too, and removes the run's network slot.
func TestServeSweepsOnEOF(t *testing.T) {
	if os.Geteuid() != 0 || netns.Available() != nil {
		t.Skip("needs root with ip and iptables: the sweep of namespaces is what is tested")
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	run := "janitor-test"
	n, err := netns.Create(ctx, run, proc.Self(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = netns.SweepSlot(ctx, n.Slot, netns.OwnedBy(run)) })
	h, err := n.AddHost(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	cmd := h.Command(ctx, "sleep", "120")
	cmd.Env = append(os.Environ(), proc.Env(run, proc.Self())...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-reaped })
	if err := proc.Pause(cmd.Process.Pid, 2*time.Second); err != nil {
		t.Fatal(err)
	}

	in := strings.NewReader(`{"slot":` + itoa(n.Slot) + "}\n")
	start := time.Now()
	if err := Serve(ctx, run, in, log); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	took := time.Since(start)
	select {
	case <-reaped:
	case <-time.After(2 * time.Second):
		t.Fatalf("paused process in the run's namespace survived the sweep")
	}
	slots, err := netns.Slots()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if s.Slot == n.Slot {
			t.Errorf("slot %d still exists after the sweep: %+v", n.Slot, s)
		}
	}
	if took > 2*time.Second {
		t.Errorf("sweep took %s; the janitor promises 2 s", took)
	}
}

// TestStartedJanitorSweepsWhenControllerPipeCloses runs the real janitor
// process through Handle, as chaos run does: closing our end of the pipe
// without saying done (what the kernel does when the controller dies) must
// kill the run's tagged processes.
func TestStartedJanitorSweepsWhenControllerPipeCloses(t *testing.T) {
	exe := buildChaos(t)
	run := "janitor-test-proc"
	sleeper := exec.Command("sleep", "120")
	sleeper.Env = append(os.Environ(), proc.Env(run, proc.Self())...)
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(reaped) }()
	t.Cleanup(func() { _ = sleeper.Process.Kill(); <-reaped })

	h, err := Start(exe, run, "")
	if err != nil {
		t.Fatal(err)
	}
	if !h.Alive() {
		t.Fatal("janitor not alive")
	}
	h.mu.Lock()
	_ = h.w.Close() // no "done": as if the controller had died
	h.mu.Unlock()
	select {
	case <-reaped:
	case <-time.After(3 * time.Second):
		t.Fatal("tagged process still alive 3 s after the controller's pipe closed")
	}
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
		t.Fatal("janitor did not exit after its sweep")
	}
}

func buildChaos(t *testing.T) string {
	t.Helper()
	exe := t.TempDir() + "/chaos"
	out, err := exec.Command("go", "build", "-o", exe, "../../cmd/chaos").CombinedOutput()
	if err != nil {
		t.Fatalf("build chaos: %v\n%s", err, out)
	}
	return exe
}

func itoa(n int) string { return strconv.Itoa(n) }
