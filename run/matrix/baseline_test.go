package matrix

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/report/diagnose"
)

// TestBaselineOf: the baseline is the first cell the machine can run,
// without a fault, fenced, nothing expected, on one server for the
// baseline's time (its flags after the cell's), under a name of its own.
func TestBaselineOf(t *testing.T) {
	cells := []Cell{
		{Recipe: "exec:/c", Label: "subject", Nemesis: []string{"pause-holder"}, Fencing: "off", Cluster: "docker", Expect: invalid(fence.NameDoubleWriter)},
		{Recipe: "exec:/c", Label: "subject", Workload: "config", Nemesis: []string{"kill-zk"}, Fencing: "off",
			Args: []string{"--admins", "2", "--time-limit", "30s"}, Expect: invalid(fence.NameDoubleWriter), Limit: time.Minute},
	}
	skipDocker := func(c Cell) string {
		if c.Cluster == "docker" {
			return "no Docker engine"
		}
		return ""
	}
	b, ok := BaselineOf(cells, skipDocker, 3*time.Second)
	if !ok {
		t.Fatal("no baseline")
	}
	if b.Name() != "config:subject/none/fencing-on/baseline" || len(b.Expect) != 0 || b.StopsAtFirst() || b.Limit != 0 {
		t.Errorf("baseline %s expects %v, limit %s", b.Name(), b.Expect, b.Limit)
	}
	args := strings.Join(b.RunArgs(7), " ")
	if !strings.Contains(args, "--workload config") || !strings.HasSuffix(args, "--admins 2 --time-limit 30s --nodes 1 --time-limit 3s") {
		t.Errorf("baseline args %q", args)
	}
	if !slices.Equal(cells[1].Args, []string{"--admins", "2", "--time-limit", "30s"}) || cells[1].Nemesis[0] != "kill-zk" {
		t.Errorf("the cell itself changed: %+v", cells[1])
	}
	if _, ok := BaselineOf(cells[:1], skipDocker, time.Second); ok {
		t.Error("a baseline among cells that are all skipped")
	}
}

// TestBaselineStuck: a baseline run whose subject invoked an acquire and
// completed nothing (the fake chaos run's history) stops the gate: the
// diagnosis says so, the run got the baseline's time limit, and the
// JUnit file has the baseline as its one failed case.
func TestBaselineStuck(t *testing.T) {
	t.Setenv(fakeRunEnv, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := BaselineOf([]Cell{{Recipe: "0s", Nemesis: []string{"none"}, Fencing: "on"}}, nil, 2*time.Second)
	dir := t.TempDir()
	b := RunBaseline(context.Background(), c, Options{Exe: exe, Results: dir, Seed: 1})
	if b.HarnessFailed() || b.Err != nil || !b.Stuck() || !b.Diagnosis.Nothing {
		t.Fatalf("baseline %+v: want a subject that completed nothing", b)
	}
	limits, err := os.ReadFile(filepath.Join(dir, "limits"))
	if err != nil || !strings.Contains(string(limits), "baseline 2s") {
		t.Errorf("limits %q (%v): want the baseline's 2s", limits, err)
	}
	var out strings.Builder
	b.Write(&out)
	if !strings.Contains(out.String(), "the subject could not run: it completed no operation (acquire: 0 of 1 ok)") {
		t.Errorf("baseline said:\n%s", out.String())
	}
	junit := filepath.Join(dir, "gate.xml")
	if err := WriteBaselineJUnit(junit, "gate", b); err != nil {
		t.Fatal(err)
	}
	x, _ := os.ReadFile(junit)
	if !strings.Contains(string(x), `failures="1"`) || !strings.Contains(string(x), `name="0s/none/fencing-on/baseline"`) {
		t.Errorf("JUnit:\n%s", x)
	}
}

// TestBaselineWrite: a subject that ran is one line; a run that failed
// says so with the end of its output, as a JUnit error.
func TestBaselineWrite(t *testing.T) {
	ran := Baseline{Cell: Cell{Recipe: "seed"}, Attempt: Attempt{Dir: "/r", Exit: 0, Elapsed: 14 * time.Second},
		Diagnosis: diagnose.Diagnosis{Kinds: []diagnose.Kind{{F: "acquire", Invoked: 40, OK: 39}}}}
	var out strings.Builder
	ran.Write(&out)
	if ran.Stuck() || out.String() != "baseline (14.0s): the subject ran: acquire: 39 of 40 ok\n" {
		t.Errorf("ran: %q", out.String())
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "b.log")
	if err := os.WriteFile(log, []byte("one\nchaos run: start worker process 0: exited before hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	failed := Baseline{Cell: Cell{Recipe: "seed"}, Attempt: Attempt{Exit: 255, Outcome: Error, Detail: "harness failure"}, Log: log}
	out.Reset()
	failed.Write(&out)
	if !failed.HarnessFailed() || !strings.Contains(out.String(), "the run failed (exit 255)") || !strings.Contains(out.String(), "| chaos run: start worker process 0") {
		t.Errorf("failed: %q", out.String())
	}
	junit := filepath.Join(dir, "gate.xml")
	if err := WriteBaselineJUnit(junit, "gate", failed); err != nil {
		t.Fatal(err)
	}
	if x, _ := os.ReadFile(junit); !strings.Contains(string(x), `errors="1"`) || !strings.Contains(string(x), `type="harness"`) {
		t.Errorf("JUnit:\n%s", x)
	}
}
