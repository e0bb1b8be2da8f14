package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// helloBaseline is another worker command to time beside the built-in
// worker, in turns, for a before/after ratio on one machine at one time:
// a program and its first arguments, to which the protocol's flags and
// --recipe seed are appended (e.g. "/tmp/old/chaos worker" for the worker
// that was a subcommand of chaos).
var helloBaseline = flag.String("hello.baseline", "", "BenchmarkExecToHello: a worker command to time beside chaos-worker (program and first arguments)")

func TestMain(m *testing.M) { chaostest.Main(m) }

// BenchmarkExecToHello starts the built-in worker (seed) HelloStarts times,
// one at a time, against a one-node ZooKeeper on loopback and reports the
// median and 95th percentile of exec to hello (the project's target:
// median <= HelloTarget on a quiet machine). With -hello.baseline it times
// that command too, in turns, and reports the baseline's figures and the
// ratio of the medians. Nothing is judged here: a speed target lives in
// the figures, not in a test that fails on a busy machine.
func BenchmarkExecToHello(b *testing.B) {
	if err := local.Available(); err != nil {
		b.Skipf("no ZooKeeper: %v", err)
	}
	zk := benchEnsemble(b)
	exe := chaostest.Binary(b)
	// No register: a worker makes its register client without calling
	// it, and is stopped before any request.
	flags := subjects.Flags{ZK: zk, Register: "http://127.0.0.1:1", SessionTimeout: 3 * time.Second, Token: recipes.TokenCzxid, Root: "/hello"}
	prog, args, err := subjects.Command(exe, Seed, flags)
	if err != nil {
		b.Fatal(err)
	}
	starts := []StartFunc{startCommand(b, prog, args)}
	if *helloBaseline != "" {
		base := strings.Fields(*helloBaseline)
		starts = append(starts, startCommand(b, base[0], append(append(base[1:], flags.Args()...), "--recipe", Seed)))
	}
	// One start of each before the clock, as chaos bench does.
	if _, err := TimeHellos(b.Context(), 1, starts); err != nil {
		b.Fatal(err)
	}
	all := make([][]int64, len(starts))
	for b.Loop() {
		times, err := TimeHellos(b.Context(), HelloStarts, starts)
		if err != nil {
			b.Fatal(err)
		}
		for i := range all {
			all[i] = append(all[i], times[i]...)
		}
	}
	report := func(prefix string, xs []int64) {
		b.ReportMetric(float64(Median(xs))/1e6, prefix+"median-ms")
		b.ReportMetric(float64(Quantile(xs, 0.95))/1e6, prefix+"p95-ms")
	}
	report("", all[0])
	if len(all) > 1 {
		report("baseline-", all[1])
		b.ReportMetric(float64(Median(all[1]))/float64(Median(all[0])), "baseline/worker")
	}
}

// benchEnsemble starts a one-node ZooKeeper on loopback for the benchmark
// and returns its connect string; it is closed when the benchmark ends.
func benchEnsemble(b *testing.B) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := local.Launch(ctx, local.Config{Nodes: 1, Dir: b.TempDir(), Env: proc.Env(benchRun, proc.Self()),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			b.Errorf("close ZooKeeper: %v", err)
		}
	})
	return c.ConnectString()
}

// benchRun tags the benchmark's processes, so a sweep finds what a killed
// benchmark left.
var benchRun = fmt.Sprintf("bench-hello-%d", os.Getpid())

// startCommand starts prog with args as a worker whose stderr is dropped,
// and stops it by closing its input (it closes its session and exits),
// killing it if it has not exited within seconds.
func startCommand(b *testing.B, prog string, args []string) StartFunc {
	return func(ctx context.Context) (*worker.Proc, func(), error) {
		cmd := exec.Command(prog, args...)
		cmd.Env = append(os.Environ(), proc.Env(benchRun, proc.Self())...)
		p := worker.New(cmd, worker.Options{Handler: quiet{}})
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := p.Start(sctx); err != nil {
			return nil, nil, err
		}
		return p, func() {
			_ = p.CloseInput()
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				b.Logf("worker %d did not exit; killing", p.PID())
				_ = p.Kill()
				<-p.Done()
			}
		}, nil
	}
}
