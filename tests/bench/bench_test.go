package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/run/bench"
)

// TestQuickBench runs `chaos bench`, small (below): every figure (the
// built-in worker's start each way, raw pairs and each default subject,
// lock and whole section, hot and on 8 keys) is above zero, the overhead
// was measured, every target has a verdict in bench.json and in the
// output, and the bench left nothing.
//
// It is slow because a bench measures fifteen windows one after another
// (two raw-pair figures, four for each of the three default subjects,
// and the overhead), after the timed worker starts. Every default
// subject is measured, as make bench does: a smaller bench would leave a
// figure, or a target's verdict, untested. What the figures are is not
// tested here, so it runs 2 clients on one server instead of 8 on three,
// windows of 500 ms after 200 ms of warm-up instead of --quick's 2 s
// (every figure and verdict is still made: an empty window stays open
// until it counts one), and helloStarts worker starts each way instead
// of bench.HelloStarts (the figure is a median and a p95 of however many
// there are; run/bench's BenchmarkExecToHello measures the 50). Each
// start is a process and a ZooKeeper session, which on the suite's busy
// 2 cores took up to a second: 100 of them were most of this test's time
// under load (107 s, against 25 s alone).
func TestQuickBench(t *testing.T) {
	chaostest.LongRun(t)
	const helloStarts = 10
	chaostest.NeedEnsemble(t)
	bin := chaostest.Binary(t)
	results := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "bench", "--warmup", "200ms", "--window", "500ms", "--clients", "2", "--nodes", "1",
		"--hello-starts", fmt.Sprint(helloStarts), "--results", results)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chaos bench: %v\n%s\n%s", err, stdout.String(), chaostest.Tail(stderr.String(), 30))
	}
	_, dir, ok := strings.Cut(stdout.String(), "bench folder: ")
	dir, _, _ = strings.Cut(dir, " ")
	if !ok || !strings.HasPrefix(dir, filepath.Join(results, "bench")+"/") {
		t.Fatalf("output names no bench folder under %s:\n%s", results, stdout.String())
	}
	res := chaostest.ReadJSON[bench.Result](t, dir, bench.File)
	defer chaostest.AssertRunLeftNothing(t, res.RunID, chaostest.RunSlot(dir))

	want := 2 + len(bench.DefaultSubjects)*4 // raw hot and 8 keys; per subject lock and section, hot and 8 keys
	if len(res.Figures) != want {
		t.Errorf("%d figures, want %d: %+v", len(res.Figures), want, res.Figures)
	}
	for _, f := range res.Figures {
		if f.PerSec <= 0 || f.Ops <= 0 || f.Includes == "" {
			t.Errorf("figure %s: %v/s, %d ops, includes %q: want every figure measured", f.Name(), f.PerSec, f.Ops, f.Includes)
		}
	}
	if o := res.Overhead; o == nil || o.DirectNS <= 0 || o.WorkerNS <= 0 || o.Samples == 0 {
		t.Errorf("overhead not measured: %+v", o)
	}
	wantWays := 1 // direct; in netns mode also through a namespace
	if res.NetMode == "netns" {
		wantWays = 2
	}
	if len(res.Hello) != wantWays {
		t.Errorf("worker start figures %+v, want %d", res.Hello, wantWays)
	}
	for _, h := range res.Hello {
		if h.Starts != helloStarts || len(h.RawNS) != h.Starts || h.MedianNS <= 0 || h.P95NS < h.MedianNS {
			t.Errorf("worker start %s: %d starts, median %d ns, p95 %d ns: want %d measured", h.Way, h.Starts, h.MedianNS, h.P95NS, helloStarts)
		}
		if !strings.Contains(stdout.String(), "worker start (seed, "+h.Way+"): exec to hello median") {
			t.Errorf("output does not show the worker start %s:\n%s", h.Way, stdout.String())
		}
	}
	if len(res.Targets) != 4 {
		t.Fatalf("targets %+v, want 4", res.Targets)
	}
	for _, tg := range res.Targets {
		if !tg.Known {
			t.Errorf("target %q has no verdict", tg.Name)
		}
		if !strings.Contains(stdout.String(), tg.Name) {
			t.Errorf("output does not show target %q:\n%s", tg.Name, stdout.String())
		}
	}
	if !strings.Contains(stdout.String(), "MET") {
		t.Errorf("output shows no verdict:\n%s", stdout.String())
	}
}

// TestMissingWorker: a chaos binary without chaos-worker beside it is
// refused before anything starts: exit 255, the first line naming the
// file and make build, no bench folder.
func TestMissingWorker(t *testing.T) {
	alone := chaostest.BinaryAlone(t)
	results := t.TempDir()
	var stderr bytes.Buffer
	cmd := exec.Command(alone, "bench", "--quick", "--subjects", "seed", "--results", results)
	cmd.Stderr = &stderr
	code := chaostest.ExitOf(cmd.Run())
	first, _, _ := strings.Cut(stderr.String(), "\n")
	if missing := filepath.Join(filepath.Dir(alone), "chaos-worker"); code != 255 || !strings.Contains(first, missing) || !strings.Contains(first, "make build") {
		t.Errorf("exit %d, first line %q; want 255 naming %s and make build", code, first, missing)
	}
	if entries, _ := os.ReadDir(results); len(entries) != 0 {
		t.Errorf("a missing worker left %v in the results folder", entries)
	}
}

// TestBadFlag: the first line names the problem, exit 255, and nothing
// was started (no bench folder).
func TestBadFlag(t *testing.T) {
	bin := chaostest.Binary(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--subjects", "seed,nope"}, `unknown subject "nope"`},
		{[]string{"--hello-starts", "0"}, "--hello-starts 0: need at least 1"},
	} {
		results := t.TempDir()
		var stderr bytes.Buffer
		cmd := exec.Command(bin, append(append([]string{"bench"}, c.args...), "--results", results)...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		if code := chaostest.ExitOf(err); code != 255 {
			t.Errorf("%v: exit %d, want 255", c.args, code)
		}
		if first, _, _ := strings.Cut(stderr.String(), "\n"); !strings.Contains(first, c.want) {
			t.Errorf("%v: first line %q does not name the problem (%q)", c.args, first, c.want)
		}
		if entries, _ := os.ReadDir(results); len(entries) != 0 {
			t.Errorf("%v: a bad flag left %v in the results folder", c.args, entries)
		}
	}
}
