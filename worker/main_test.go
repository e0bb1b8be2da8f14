package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/proc"
	"github.com/zkchaos/zkchaos/register"
)

// envWorker makes the test binary act as a worker process (its value is
// the JSON Config), so the protocol is tested across a real process
// boundary, with real pipes, signals and SIGSTOP.
const envWorker = "ZKCHAOS_TEST_WORKER"

var (
	zkAddr string // one-node ensemble shared by the package's tests
	regURL string // in-process register
	regDir string
	// chaosBin is the real chaos binary when it builds; otherwise the
	// tests fall back to re-executing the test binary as the worker.
	chaosBin string
	testRun  = fmt.Sprintf("test-worker-%d", os.Getpid())
)

func TestMain(m *testing.M) {
	if js := os.Getenv(envWorker); js != "" {
		os.Exit(workerMain(js))
	}
	os.Exit(runTests(m))
}

func workerMain(js string) int {
	var cfg Config
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bad worker config:", err)
		return 255
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("process", cfg.Process)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, cfg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func runTests(m *testing.M) int {
	_, javaErr := exec.LookPath("java")
	_, cpErr := local.DefaultClassPath()
	if javaErr != nil || cpErr != nil {
		fmt.Fprintf(os.Stderr, "no ZooKeeper (java: %v, jars: %v): ZooKeeper tests skip\n", javaErr, cpErr)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "zkchaos-worker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
	defer scancel()
	c, err := local.New(sctx, local.Config{Nodes: 1, Dir: dir + "/zk", Env: proc.Env(testRun, os.Getpid())})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := c.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "close cluster:", err)
		}
	}()
	if err := c.Start(sctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := c.WaitReady(sctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	zkAddr = c.ConnectString()

	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- register.Serve(ctx, register.Config{Listen: "127.0.0.1:0", LogPath: dir + "/apply.log",
			Mode: register.ModeOn, Logger: slog.New(slog.DiscardHandler)}, func(a string) { ready <- a })
	}()
	select {
	case a := <-ready:
		regURL = "http://" + a
	case err := <-served:
		fmt.Fprintln(os.Stderr, "register:", err)
		return 1
	}
	regDir = dir
	chaosBin = buildChaos(dir)
	code := m.Run()
	cancel()
	<-served
	return code
}

// buildChaos builds ./cmd/chaos so the tests run the real `chaos worker`.
func buildChaos(dir string) string {
	goBin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintf(os.Stderr, "no go on PATH (%v), workers re-exec the test binary\n", err)
		return ""
	}
	bin := filepath.Join(dir, "chaos")
	var out []byte
	out, err = exec.Command(goBin, "build", "-o", bin, "github.com/zkchaos/zkchaos/cmd/chaos").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot build cmd/chaos (%v), workers re-exec the test binary:\n%s", err, out)
		return ""
	}
	return bin
}

func needZK(t *testing.T) {
	t.Helper()
	if zkAddr == "" {
		t.Skip("no ZooKeeper")
	}
}

// testLogger logs to the test's output until the test ends.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// testWriter forwards to t's output and drops what comes after the test:
// worker stderr and client goroutines can outlive it by a moment.
func testWriter(t *testing.T) io.Writer {
	w := &lateSafe{w: t.Output()}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return w
}

type lateSafe struct {
	mu   sync.Mutex
	w    io.Writer
	done bool
}

func (w *lateSafe) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(b), nil
	}
	return w.w.Write(b)
}
