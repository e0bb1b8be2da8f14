package worker

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/fakeworker"
	"github.com/zkchaos/zkchaos/resource/register"
)

// envWorker makes the test binary act as a worker process (its value is
// the JSON Config), so the protocol is tested across a real process
// boundary, with real pipes, signals and SIGSTOP.
const envWorker = "ZKCHAOS_TEST_WORKER"

var (
	zkAddr string // one-node ensemble shared by the package's tests
	regURL string // in-process register
	regDir string
	// chaosExe is where a chaos binary would be whose folder holds the
	// real built-in worker (cmd/chaos-worker), when it builds: the tests
	// start it through subjects.Command, as a run does. Otherwise the
	// tests fall back to re-executing the test binary as the worker.
	chaosExe string
	testRun  = fmt.Sprintf("test-worker-%d", os.Getpid())
)

func TestMain(m *testing.M) {
	fakeworker.MaybeRun()
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
	flag.Parse()
	if testing.Short() {
		// The handle's own tests (fake workers) need no ensemble.
		fmt.Fprintln(os.Stderr, "-short: ZooKeeper tests skip")
		return m.Run()
	}
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
	c, err := local.Launch(sctx, local.Config{Nodes: 1, Dir: dir + "/zk", Env: proc.Env(testRun, proc.Self())})
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
	chaosExe = buildWorker(dir)
	code := m.Run()
	cancel()
	<-served
	return code
}

// buildWorker builds ./cmd/chaos-worker into dir, so the tests run the
// real built-in worker, and returns the path of a chaos binary in dir
// (which need not exist: only its folder is used), or "" when the build
// fails.
func buildWorker(dir string) string {
	goBin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintf(os.Stderr, "no go on PATH (%v), workers re-exec the test binary\n", err)
		return ""
	}
	exe := filepath.Join(dir, "chaos")
	var out []byte
	out, err = exec.Command(goBin, "build", "-o", subjects.WorkerPath(exe), "github.com/zkchaos/zkchaos/cmd/chaos-worker").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot build cmd/chaos-worker (%v), workers re-exec the test binary:\n%s", err, out)
		return ""
	}
	return exe
}

func needZK(t *testing.T) {
	t.Helper()
	if zkAddr == "" {
		t.Skip("no ZooKeeper")
	}
}

// inbox is a Handler for tests: events and late answers go to channels
// (buffered beyond what a test produces), completions and protocol errors
// are kept in order.
type inbox struct {
	events chan Message
	late   chan lateAnswer

	mu        sync.Mutex
	log       []string // "complete <f> <type|err>", "late <f>", "event <event>", "protocol"
	protoErrs []error
}

type lateAnswer struct {
	req Request
	m   Message
}

func newInbox() *inbox {
	return &inbox{events: make(chan Message, 1024), late: make(chan lateAnswer, 64)}
}

func inboxOf(p *Proc) *inbox { return p.handler.(*inbox) }

func (b *inbox) note(s string) {
	b.mu.Lock()
	b.log = append(b.log, s)
	b.mu.Unlock()
}

func (b *inbox) Event(m Message) {
	b.note("event " + m.Event + " " + m.Key)
	b.events <- m
}

func (b *inbox) Complete(req Request, m Message, err error) {
	if err != nil {
		b.note("complete " + req.F + " error")
		return
	}
	b.note("complete " + req.F + " " + m.Type)
}

func (b *inbox) Late(req Request, m Message) {
	b.note("late " + req.F + " " + req.Key)
	b.late <- lateAnswer{req, m}
}

func (b *inbox) ProtocolError(err error) {
	b.mu.Lock()
	b.protoErrs = append(b.protoErrs, err)
	b.log = append(b.log, "protocol")
	b.mu.Unlock()
}

func (b *inbox) notes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.log...)
}
