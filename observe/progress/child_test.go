package progress

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestPipeToParent runs this test binary as a child that reports on the
// pipe Pipe made, starts a long-lived process of its own (as a run starts
// its janitor) and exits: the parent reads the statuses and sees the
// pipe's end when the child exits, not when its process does.
func TestPipeToParent(t *testing.T) {
	if os.Getenv("PROGRESS_TEST_CHILD") == "1" {
		child()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPipeToParent$")
	cmd.Env = append(os.Environ(), "PROGRESS_TEST_CHILD=1")
	cmd.Stderr = os.Stderr
	r, w, err := Pipe(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var got []Status
	done := make(chan struct{})
	go func() { ReadStatuses(r, func(s Status) { got = append(got, s) }); close(done) }()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the pipe stayed open after the child exited: its own process inherited it")
	}
	if len(got) == 0 || got[0].OK != 42 {
		t.Errorf("statuses %v", got)
	}
}

func child() {
	p := ParentPipe()
	if p == nil || os.Getenv(EnvFD) != "" {
		os.Exit(3)
	}
	// A process of the run's own, outliving it.
	if err := exec.Command("sleep", "5").Start(); err != nil {
		os.Exit(4)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	Emit(ctx, p, func() (Status, bool) { return Status{OK: 42, Target: -1}, true })
	p.Close()
}
