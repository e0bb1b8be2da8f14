package workloads

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/history"
)

// TestElectionStepLeadsABatchAndResigns: a candidate that wins scans,
// claims and completes each task of a batch under its term (the work
// inside the complete, in the critical phase), and resigns; tasks done
// are not picked again.
func TestElectionStepLeadsABatchAndResigns(t *testing.T) {
	w, err := New(ElectionName, Settings{Tasks: 3, Hold: 7})
	if err != nil {
		t.Fatal(err)
	}
	e := w.(*Election)
	c := &scripted{answers: map[string]Result{
		history.FCampaign: okWith(&history.Value{Token: history.Int64(42)}),
		history.FScan:     okWith(nil), history.FClaim: okWith(nil), history.FComplete: okWith(nil), history.FResign: okWith(nil),
	}}
	e.Step(context.Background(), c, rand.New(rand.NewPCG(1, 2)))
	for _, op := range c.ops {
		if op.F == history.FComplete && op.Work != 7 {
			t.Errorf("complete without the hold as its work: %+v", op)
		}
	}
	want := "campaign scan claim complete claim complete claim complete resign"
	if got := strings.Join(opsOf(c), " "); got != want {
		t.Errorf("ops %q, want %q", got, want)
	}
	if left := e.pick(nil, 10); len(left) != 0 {
		t.Errorf("tasks left after all completed: %v", left)
	}
	sawCritical := false
	for _, p := range c.phases {
		sawCritical = sawCritical || p == Critical
	}
	if !sawCritical || c.phases[len(c.phases)-1] != Idle {
		t.Errorf("phases %v: want Critical during a complete and Idle at the end", c.phases)
	}
	if _, err := New(ElectionName, Settings{Tasks: 0}); err == nil {
		t.Error("an election without tasks was accepted")
	}
	if _, err := New(ElectionName, Settings{Tasks: MaxTableTasks + 1}); err == nil {
		t.Error("a first chunk larger than a scan can list was accepted")
	}
}

// TestElectionStepStopsWhenFenced: a claim refused (a newer term took
// over) ends the batch without a complete.
func TestElectionStepStopsWhenFenced(t *testing.T) {
	w, _ := New(ElectionName, Settings{Tasks: 3})
	c := &scripted{answers: map[string]Result{
		history.FCampaign: okWith(&history.Value{Token: history.Int64(1)}),
		history.FScan:     okWith(nil), history.FClaim: {Type: history.Fail, Error: "rejected: stale term"},
		history.FResign: okWith(nil),
	}}
	w.Step(context.Background(), c, nil)
	if got := strings.Join(opsOf(c), " "); got != "campaign scan claim resign" {
		t.Errorf("ops %q", got)
	}
}

func opsOf(c *scripted) []string {
	var fs []string
	for _, op := range c.ops {
		fs = append(fs, op.F)
	}
	return fs
}
