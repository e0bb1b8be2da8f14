package core

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/resource/register"
)

// smallTmpfs mounts a tmpfs of size (mount's syntax, "64k") on a fresh
// directory, unmounted when the test ends.
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a small tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			_ = exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// fill writes zeros into dir until its file system is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatalf("fill: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !strings.Contains(err.Error(), "no space left on device") {
				t.Fatalf("fill: %v", err)
			}
			return
		}
	}
}

// TestRegisterExitsWhenApplyLogFails: a register whose apply log cannot
// be written refuses the write that failed and every one after it, and
// exits non-zero saying why.
func TestRegisterExitsWhenApplyLogFails(t *testing.T) {
	dir := smallTmpfs(t, "64k")
	cmd := exec.Command(chaostest.Binary(t), "register", "--log", filepath.Join(dir, "apply.log"), "--listen", "127.0.0.1:0", "--fencing", "on")
	const secret = "diskfull-test-secret" // the register starts only with one
	cmd.Env = append(os.Environ(), register.SecretEnv+"="+secret)
	var se bytes.Buffer
	cmd.Stderr = &se
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Reaped by one Wait, started after the hello is read (Wait closes
	// the pipe) or by the cleanup if the test fails before that.
	exited := make(chan error, 1)
	var reap sync.Once
	wait := func() { reap.Do(func() { go func() { exited <- cmd.Wait() }() }) }
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		wait()
		<-exited
	})
	var hello struct {
		Listen string `json:"listen"`
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &hello) != nil {
		t.Fatalf("register said %q", sc.Text())
	}
	wait()
	fill(t, dir)
	refused := 0
	for i := 1; i <= 200 && refused < 3; i++ {
		body := fmt.Sprintf(`{"key":"k","value":%d,"token":%d,"process":1}`, i, i)
		req, err := http.NewRequest(http.MethodPost, "http://"+hello.Listen+"/write", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			refused++ // it has stopped listening
			continue
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			if refused > 0 {
				t.Fatalf("write %d accepted after the apply log failed", i)
			}
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("write %d: HTTP %d", i, resp.StatusCode)
		}
	}
	if refused == 0 {
		t.Fatal("200 writes on a full file system all accepted")
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("register exit: %v, want non-zero", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("register still running 15s after its apply log failed")
	}
	if !strings.Contains(se.String(), "no space left on device") {
		t.Fatalf("register did not say why it stopped:\n%s", chaostest.Tail(se.String(), 2000))
	}
}

// TestRunStopsWhenResultsFolderFills fills the results folder (a small
// tmpfs) while a holder is paused. The run must stop at once: heal, tear
// down, exit 255 with the cause on the first line of its error, and
// leave nothing behind; before, it carried on to its time limit recording
// nothing.
func TestRunStopsWhenResultsFolderFills(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := smallTmpfs(t, "256m")
	cmd, _, se := chaostest.Start(t, "run", "--results", results, "--name", "diskfull", "--time-limit", "3m",
		"--nemesis-interval", "1s", "--pause", "30s", "--seed", "5")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	dir := chaostest.WaitForRun(t, results, se, "pause", chaostest.PausedNow)
	fill(t, results)
	filled := time.Now()
	var err error
	select {
	case err = <-exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("run still going 2 minutes after its results folder filled\nstderr: %s", chaostest.Tail(se.String(), 3000))
	}
	took := time.Since(filled)
	t.Logf("MEASURE run exited %s after the results folder filled", took.Round(time.Millisecond))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 255 {
		t.Fatalf("exit %v, want 255\nstderr: %s", err, chaostest.Tail(se.String(), 3000))
	}
	var failure string
	for _, line := range strings.Split(se.String(), "\n") {
		if strings.HasPrefix(line, "chaos run: harness failure: ") {
			failure = line
			break
		}
	}
	if !strings.Contains(failure, "no space left on device") {
		t.Errorf("first line of the error does not name the full disk: %q", failure)
	}
	if took > 30*time.Second {
		t.Errorf("run took %s to stop after the results folder filled", took)
	}
	if !strings.Contains(se.String(), "final phase: everything healed") {
		t.Errorf("no complete restore before teardown\nstderr: %s", chaostest.Tail(se.String(), 3000))
	}
	chaostest.AssertNothingLeft(t, dir)
}
