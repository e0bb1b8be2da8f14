package checker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
)

func TestCompletionOf(t *testing.T) {
	limit := int64(60 * time.Second)
	done := store.Status{Phase: store.PhaseDone, StoppedBecause: store.StopTimeLimit, TimeLimitNS: limit,
		WorkloadNS: limit, FinalPhase: true}
	cases := []struct {
		name     string
		st       store.Status
		found    bool
		complete bool
		why      string
	}{
		{"finished", done, true, true, ""},
		{"resumed, last segment finished", func() store.Status { s := done; s.Segment = 2; return s }(), true, true, "complete in 2 segments"},
		{"resumed, last segment killed", store.Status{Phase: store.PhaseWorkload, TimeLimitNS: limit, Segment: 3}, true, false,
			`phase "workload" without finishing (killed?); segment 3 (resumed after a gap)`},
		{"no status file", store.Status{}, false, false, "no status.json"},
		{"killed in the workload", store.Status{Phase: store.PhaseWorkload, TimeLimitNS: limit}, true, false, `phase "workload"`},
		{"interrupted", func() store.Status {
			s := done
			s.StoppedBecause = store.StopInterrupted + " (signal interrupt)"
			s.WorkloadNS = int64(10 * time.Second)
			return s
		}(), true, false, "stopped early (interrupted (signal interrupt)); workload reached 10s of 1m0s"},
		{"final phase cut", func() store.Status { s := done; s.FinalPhase = false; return s }(), true, false, "final phase"},
		{"schedule done", func() store.Status {
			s := done
			s.StoppedBecause = store.StopScheduleDone
			s.WorkloadNS = int64(9 * time.Second)
			return s
		}(), true, true, "ended once its schedule's last entry was undone, as stopping after the schedule asks; workload reached 9s of 1m0s"},
		{"schedule done, final phase cut", func() store.Status {
			s := done
			s.StoppedBecause = store.StopScheduleDone
			s.FinalPhase = false
			return s
		}(), true, false, "the final phase (heal everything, final reads) did not run to its end"},
		{"stopped at first", func() store.Status {
			s := done
			s.StoppedBecause = store.StoppedAtFirstBecause("double-writer")
			s.WorkloadNS = int64(4200 * time.Millisecond)
			return s
		}(), true, false, "stopped at its first violation (double-writer), as stopping at the first violation asks; workload reached 4.2s of 1m0s, then the final phase ran"},
		{"stopped at first, final phase cut", func() store.Status {
			s := done
			s.StoppedBecause = store.StoppedAtFirstBecause("double-writer")
			s.FinalPhase = false
			return s
		}(), true, false, "stopped early (first-violation (double-writer))"},
		{"stopped at first, killed after", func() store.Status {
			s := done
			s.StoppedBecause = store.StoppedAtFirstBecause("double-writer")
			s.Phase = store.PhaseFinal
			return s
		}(), true, false, `phase "final"`},
	}
	for _, c := range cases {
		got := CompletionOf(c.st, c.found, int64(12*time.Second))
		if got.Completed != c.complete || !strings.Contains(got.Why, c.why) {
			t.Errorf("%s: got completed=%v why=%q, want %v and %q", c.name, got.Completed, got.Why, c.complete, c.why)
		}
		if want := c.name == "stopped at first"; got.StoppedAtFirst != want {
			t.Errorf("%s: stopped at first = %v, want %v", c.name, got.StoppedAtFirst, want)
		}
	}
	if got := CompletionOf(store.Status{Phase: store.PhaseWorkload}, true, int64(12*time.Second)); got.ReachedNS != int64(12*time.Second) {
		t.Errorf("a killed run's reach is its history's end: got %d", got.ReachedNS)
	}
}

// An incomplete run is never valid; a violation found in it still is
// invalid.
func TestRunAllIncompleteRun(t *testing.T) {
	pass := Checker{Name: "pass", Check: func(context.Context, Input) Result { return Result{Valid: Valid} }}
	fail := Checker{Name: "fail", Check: func(context.Context, Input) Result { return Result{Valid: Invalid} }}
	inc := &Completion{Completed: false, Why: "killed"}
	in := Input{Completion: inc}
	if r := Run(context.Background(), in, []string{"pass"}, []Checker{pass}); r.Valid != Unknown || r.Completion != inc {
		t.Errorf("incomplete run with no violation: got %s, want unknown with the completion", r.Valid)
	} else if !strings.Contains(strings.Join(r.Reasons, ";"), "run incomplete: killed") {
		t.Errorf("reasons do not say why: %v", r.Reasons)
	}
	if r := Run(context.Background(), in, []string{"fail"}, []Checker{fail}); r.Valid != Invalid {
		t.Errorf("incomplete run with a violation: got %s, want false", r.Valid)
	}
	// Stopped at the first violation: invalid when the full check agrees,
	// never valid when it does not.
	in.Completion = &Completion{StoppedAtFirst: true, Why: "stopped at its first violation (fail)"}
	if r := Run(context.Background(), in, []string{"fail"}, []Checker{fail}); r.Valid != Invalid {
		t.Errorf("stopped at first, violation found: got %s, want false", r.Valid)
	} else if !strings.Contains(strings.Join(r.Reasons, ";"), "run stopped at its first violation") || strings.Contains(strings.Join(r.Reasons, ";"), "incomplete") {
		t.Errorf("stopped at first: reasons should say so, not \"incomplete\": %v", r.Reasons)
	}
	if r := Run(context.Background(), in, []string{"pass"}, []Checker{pass}); r.Valid != Unknown {
		t.Errorf("stopped at first, nothing found: got %s, want unknown", r.Valid)
	}
	in.Completion = &Completion{Completed: true}
	if r := Run(context.Background(), in, []string{"pass"}, []Checker{pass}); r.Valid != Valid {
		t.Errorf("complete run: got %s, want true", r.Valid)
	}
}
