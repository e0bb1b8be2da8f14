package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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
	if err := local.Available(); err != nil {
		fmt.Fprintf(os.Stderr, "no ZooKeeper (%v): ZooKeeper tests skip\n", err)
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
	c, err := local.Launch(sctx, local.Config{Nodes: 1, Dir: dir + "/zk", Env: proc.Env(testRun, os.Getpid())})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := c.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "close cluster:", err)
		}
	}()
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
