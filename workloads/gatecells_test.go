package workloads

import (
	"slices"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	configcheck "github.com/zkchaos/zkchaos/checker/config"
	"github.com/zkchaos/zkchaos/checker/election"
	"github.com/zkchaos/zkchaos/nemesis"
)

// argOf is the value of flag in args (the last given), "" when absent.
func argOf(args []string, flag string) string {
	v := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			v = args[i+1]
		}
	}
	return v
}

// cellKey names a gate cell as the matrix does, less the subject.
func cellKey(c GateCell) string {
	k := c.Nemesis[0]
	if !c.Fenced {
		k += "/unfenced"
	}
	if c.Variant != "" {
		k += "/" + c.Variant
	}
	return k
}

// gateCellsOf are name's gate cells by cellKey; two cells of one key
// would be one cell to --cells and to the results folder.
func gateCellsOf(t *testing.T, name string) (map[string]GateCell, []string) {
	t.Helper()
	spec, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]GateCell{}
	var quick []string
	for _, c := range spec.GateCells() {
		k := cellKey(c)
		if _, dup := cells[k]; dup {
			t.Errorf("%s: two gate cells %s", name, k)
		}
		cells[k] = c
		if c.Quick {
			quick = append(quick, k)
		}
		// Every fault must be one the workload's runs accept.
		for _, f := range c.Nemesis {
			if err := nemesis.ValidateFor([]string{f}, nemesis.Caps{Workload: name, WorkerNet: true}); err != nil {
				t.Errorf("%s: cell %s: %v", name, k, err)
			}
		}
	}
	return cells, quick
}

// TestElectionGateCells: fenced, every fault of ElectionFaults (and none)
// is judged on every checker a correct candidate cannot fail; the held
// leader faults run below and above the 3 s session; each leader fault
// early and late in a batch of long tasks; unfenced, a paused leader is
// caught by stale-term; the quick set is the baseline and that cell; no
// cell sizes the task table.
func TestElectionGateCells(t *testing.T) {
	cells, quick := gateCellsOf(t, ElectionName)
	want := []string{election.NameExactlyOnce, election.NameStaleTerm, election.NameLeaderOverlap, election.NameTermOrder, election.NameDemotedWork}
	faults := map[string]bool{}
	for k, c := range cells {
		if argOf(c.Args, "--tasks") != "" {
			t.Errorf("cell %s: --tasks %q, want none (the table grows as the run uses it: the default's small final phase serves every cell)", k, argOf(c.Args, "--tasks"))
		}
		if !c.Fenced {
			continue
		}
		faults[c.Nemesis[0]] = true
		for _, n := range want {
			if c.Expect[n] != checker.Valid {
				t.Errorf("fenced cell %s does not expect %s valid", k, n)
			}
		}
	}
	for _, f := range append([]string{"none"}, ElectionFaults...) {
		if !faults[f] {
			t.Errorf("no fenced election gate cell under %s", f)
		}
	}
	session := calibrated.SessionTimeout
	for _, f := range []string{"pause-app-leader", "isolate-app-leader"} {
		below, above := cells[f+"/pause-1s"], cells[f+"/pause-5s"]
		b, errB := time.ParseDuration(argOf(below.Args, "--pause"))
		a, errA := time.ParseDuration(argOf(above.Args, "--pause"))
		if errB != nil || errA != nil || b >= session || a <= session {
			t.Errorf("%s: pauses %q and %q, want one below and one above the %s session", f, argOf(below.Args, "--pause"), argOf(above.Args, "--pause"), session)
		}
	}
	for _, f := range electionLeaderFaults {
		start, end := cells[f+"/batch-start"], cells[f+"/batch-end"]
		s, errS := time.ParseDuration(argOf(start.Args, "--first-fault"))
		e, errE := time.ParseDuration(argOf(end.Args, "--first-fault"))
		hold, errH := time.ParseDuration(argOf(end.Args, "--hold"))
		if errS != nil || errE != nil || errH != nil || argOf(start.Args, "--hold") != argOf(end.Args, "--hold") ||
			s >= hold || e < 3*hold || e >= 5*hold {
			t.Errorf("%s: batch cells %v and %v: want the same long --hold, the first fault in the first task and in the fourth or fifth", f, start.Args, end.Args)
		}
	}
	caught := cells["pause-app-leader/unfenced"]
	if len(caught.Expect) != 1 || caught.Expect[election.NameStaleTerm] != checker.Invalid {
		t.Errorf("unfenced pause-app-leader expects %v, want stale-term invalid", caught.Expect)
	}
	if !slices.Equal(quick, []string{"none", "pause-app-leader/unfenced"}) {
		t.Errorf("quick election cells %v", quick)
	}
}

// TestConfigGateCells: with two admins, the baseline and every fault of
// ConfigFaults are judged on every config checker; the quick set is the
// baseline and pause-worker.
func TestConfigGateCells(t *testing.T) {
	cells, quick := gateCellsOf(t, ConfigName)
	if len(cells) != 1+len(ConfigFaults) {
		t.Errorf("%d config gate cells, want the baseline and %d faults", len(cells), len(ConfigFaults))
	}
	for _, f := range append([]string{"none"}, ConfigFaults...) {
		c, ok := cells[f]
		if !ok {
			t.Errorf("no config gate cell under %s", f)
			continue
		}
		if argOf(c.Args, "--admins") != "2" {
			t.Errorf("config cell %s: --admins %q, want 2", f, argOf(c.Args, "--admins"))
		}
		for _, n := range configcheck.DefaultGate {
			if c.Expect[n] != checker.Valid {
				t.Errorf("config cell %s does not expect %s valid", f, n)
			}
		}
	}
	if !slices.Equal(quick, []string{"none", "pause-worker"}) {
		t.Errorf("quick config cells %v", quick)
	}
}
