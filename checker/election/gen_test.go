package election

import (
	"context"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/resource/register"
)

func genInput(s checktest.ElectionSpec) checker.Input {
	h, log := checktest.GenElection(s)
	mode := register.ModeOff
	if s.Fencing {
		mode = register.ModeOn
	}
	return checker.Input{History: h, ApplyLog: log, Fencing: mode, StartWall: 1_000_000_000}
}

func results(in checker.Input) checker.Results {
	return checker.Run(context.Background(), in, DefaultGate, All())
}

func TestGeneratedCleanRunsValid(t *testing.T) {
	dropped, refused := 0, 0
	for seed := range uint64(20) {
		in := genInput(checktest.ElectionSpec{Seed: seed, Candidates: 3, Tasks: 40, Batch: 7, LostReplyShare: 0.2,
			Fencing: true, Idempotency: true})
		res := results(in)
		for _, name := range res.Order {
			if r := res.Checkers[name]; r.Valid != checker.Valid {
				t.Fatalf("seed %d: %s = %v: %s", seed, name, r.Valid, r.Error)
			}
		}
		var d ExactlyOnceDetails
		if err := res.Checkers[NameExactlyOnce].DecodeDetails(&d); err != nil {
			t.Fatal(err)
		}
		if d.Tasks != 40 || d.ExecutedOnce != 40 {
			t.Fatalf("seed %d: %+v", seed, d)
		}
		dropped += d.RepliesDropped
		refused += d.RefusedDone
		var s StatsDetails
		if err := res.Checkers[NameStats].DecodeDetails(&s); err != nil {
			t.Fatal(err)
		}
		if s.Leaderships < 6 || s.LeaderChanges != s.Leaderships-1 || s.TakeoverMS.Count != s.Leaderships-1 || s.Terms != s.Leaderships {
			t.Fatalf("seed %d: stats %+v", seed, s)
		}
	}
	if dropped == 0 || refused < dropped {
		t.Fatalf("the runs dropped %d replies and refused %d retries: the generator does not exercise lost replies", dropped, refused)
	}
}

func TestGeneratedDuplicateCaught(t *testing.T) {
	in := genInput(checktest.ElectionSpec{Seed: 3, Candidates: 3, Tasks: 30, Batch: 5, Fencing: true, Duplicate: true})
	res := results(in)
	if res.Valid != checker.Invalid || res.Checkers[NameExactlyOnce].Valid != checker.Invalid {
		t.Fatalf("verdict %v, exactly-once %v", res.Valid, res.Checkers[NameExactlyOnce].Valid)
	}
	for _, name := range []string{NameStaleTerm, NameLeaderOverlap, NameTermOrder} {
		if r := res.Checkers[name]; r.Valid != checker.Valid {
			t.Fatalf("%s = %v: %s", name, r.Valid, r.Error)
		}
	}
	var d ExactlyOnceDetails
	if err := res.Checkers[NameExactlyOnce].DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	if d.ViolationCounts[KindDuplicate] != 1 || d.Violations[0].Task != checktest.TaskKey(1) || d.Violations[0].Executions != 2 ||
		d.FirstViolationTimeNS == nil || d.FirstViolationAfterNS == nil {
		t.Fatalf("details %+v", d)
	}
	// The same run with idempotency: the retry is refused, once each.
	in = genInput(checktest.ElectionSpec{Seed: 3, Candidates: 3, Tasks: 30, Batch: 5, Fencing: true, Idempotency: true, Duplicate: true})
	if r := CheckExactlyOnce(context.Background(), in); r.Valid != checker.Valid {
		t.Fatalf("with idempotency: %v %s", r.Valid, r.Error)
	}
}

func TestGeneratedStaleWriteCaught(t *testing.T) {
	for seed := range uint64(5) {
		in := genInput(checktest.ElectionSpec{Seed: seed, Candidates: 3, Tasks: 30, Batch: 5, Idempotency: true, StaleWrite: true})
		res := results(in)
		if r := res.Checkers[NameStaleTerm]; r.Valid != checker.Invalid {
			t.Fatalf("seed %d: stale-term %v", seed, r.Valid)
		}
		for _, name := range []string{NameExactlyOnce, NameLeaderOverlap, NameTermOrder} {
			if r := res.Checkers[name]; r.Valid != checker.Valid {
				t.Fatalf("seed %d: %s = %v: %s", seed, name, r.Valid, r.Error)
			}
		}
		var d StaleTermDetails
		if err := res.Checkers[NameStaleTerm].DecodeDetails(&d); err != nil {
			t.Fatal(err)
		}
		v := d.Violations[0]
		if d.ViolationCount != 1 || v.Op != opComplete || v.Term >= v.ServiceTerm || v.Process == v.SetByProcess {
			t.Fatalf("seed %d: details %+v", seed, d)
		}
		var s StatsDetails
		if err := res.Checkers[NameStats].DecodeDetails(&s); err != nil {
			t.Fatal(err)
		}
		if s.StaleCompletes != 1 || s.StaleRunMS.Count != 1 || s.StaleRunMS.Max <= 0 {
			t.Fatalf("seed %d: stats %+v", seed, s)
		}
		// Fenced, the register refuses the late complete.
		in = genInput(checktest.ElectionSpec{Seed: seed, Candidates: 3, Tasks: 30, Batch: 5, Idempotency: true, StaleWrite: true, Fencing: true})
		var fd StaleTermDetails
		r := CheckStaleTerm(context.Background(), in)
		if err := r.DecodeDetails(&fd); err != nil || r.Valid != checker.Valid || fd.FencedOff != 1 {
			t.Fatalf("seed %d fenced: %v %s %+v", seed, r.Valid, r.Error, fd)
		}
	}
}
