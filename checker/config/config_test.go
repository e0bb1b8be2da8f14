package config

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
)

const key = "app"

// d0 is the initial config's digest, whatever the controller wrote.
var d0 = history.ConfigDigest([]byte("initial\n"))

func dig(n int64) string { return history.ConfigDigest(history.ConfigData(n)) }

func run(t *testing.T, c func(context.Context, checker.Input) checker.Result, b *checktest.Timeline, details any) checker.Result {
	t.Helper()
	r := c(context.Background(), checker.Input{History: b.Events, SessionTimeout: time.Second})
	if details != nil {
		if err := r.DecodeDetails(details); err != nil {
			t.Fatal(err)
		}
	}
	if r.Valid != checker.Valid && r.Error == "" {
		t.Errorf("%v without an error", r.Valid)
	}
	return r
}

// clean is a correct run: two clients (10, 11) follow three versions
// written by two admins (0, 1), one of whose updates fails on a stale
// version; the final version is written at 100-110 ms and the history
// goes on to 5 s.
func clean() *checktest.Timeline {
	b := &checktest.Timeline{}
	b.Watch(0, 1, 10, key, 0, d0).Watch(1, 2, 11, key, 0, d0)
	b.Add(3, 0, history.Invoke, history.FReadConfig, key, nil, "")
	b.Add(4, 0, history.OK, history.FReadConfig, key, checktest.ConfigV(0, d0), "")
	b.Update(5, 10, 0, history.OK, key, 1, 0, 1, dig(1))
	b.Applied(11, 10, key, 1, dig(1)).Applied(12, 11, key, 1, dig(1))
	b.Update(20, 30, 1, history.Fail, key, 2, 0, 0, "")
	b.Update(31, 40, 1, history.OK, key, 3, 1, 2, dig(3))
	b.Applied(41, 10, key, 2, dig(3)).Applied(42, 10, key, 2, dig(3)) // the same version twice: allowed
	b.Applied(43, 11, key, 2, dig(3))
	b.Update(100, 110, 0, history.OK, key, 4, 2, 3, dig(4))
	b.Applied(105, 10, key, 3, dig(4)) // before the admin's answer arrived
	b.Applied(600, 11, key, 3, dig(4))
	b.Add(5000, 0, history.Invoke, history.FReadConfig, key, nil, "")
	b.Add(5001, 0, history.OK, history.FReadConfig, key, checktest.ConfigV(3, dig(4)), "")
	return b
}

func TestAllMatchesGate(t *testing.T) {
	cs := All()
	if err := checker.ValidateGate(DefaultGate, cs); err != nil {
		t.Fatal(err)
	}
	if len(cs) != len(DefaultGate) {
		t.Fatalf("%d checkers, gate of %d", len(cs), len(DefaultGate))
	}
}

func TestCleanHistoryValid(t *testing.T) {
	for _, c := range All() {
		if r := run(t, c.Check, clean(), nil); r.Valid != checker.Valid {
			t.Errorf("%s: %v: %s", c.Name, r.Valid, r.Error)
		}
	}
}

func TestMonotonicRegression(t *testing.T) {
	b := clean()
	b.Applied(5010, 11, key, 1, dig(1))
	var d MonotonicDetails
	r := run(t, CheckMonotonic, b, &d)
	if r.Valid != checker.Invalid || d.ViolationCount != 1 {
		t.Fatalf("want one regression: %v %+v", r.Valid, d)
	}
	v := d.Violations[0]
	if v.Process != 11 || v.EarlierVersion != 3 || v.LaterVersion != 1 || v.EarlierNS != 600e6 || v.LaterNS != 5010e6 {
		t.Errorf("evidence: %+v", v)
	}
	if *d.FirstViolationTimeNS != 5010e6 || !strings.Contains(r.Error, "process 11 applied version 1") {
		t.Errorf("first %d, error %q", *d.FirstViolationTimeNS, r.Error)
	}
	// Another process (a successor) and another key start afresh.
	b = clean()
	b.Watch(5010, 5011, 12, key, 0, d0).Applied(5012, 12, "other", 0, d0)
	if r := run(t, CheckMonotonic, b, nil); r.Valid != checker.Valid {
		t.Errorf("a new process or key flagged: %s", r.Error)
	}
}

func TestMonotonicLimit(t *testing.T) {
	b := clean()
	for i := range int64(5) {
		b.Applied(5010+i, 10, key, 0, d0)
	}
	r := CheckMonotonic(context.Background(), checker.Input{History: b.Events, MaxViolations: 2})
	var d MonotonicDetails
	if err := r.DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	if d.ViolationCount != 5 || len(d.Violations) != 2 || d.ViolationsOmitted != 3 {
		t.Errorf("count %d kept %d omitted %d", d.ViolationCount, len(d.Violations), d.ViolationsOmitted)
	}
}

func TestConsistentUnwritten(t *testing.T) {
	b := clean()
	b.Applied(5010, 10, key, 4, dig(99))
	var d ConsistentDetails
	r := run(t, CheckConsistent, b, &d)
	if r.Valid != checker.Invalid || d.ViolationCount != 1 || d.Violations[0].Kind != KindUnwritten ||
		d.Violations[0].Version != 4 || d.Violations[0].Process != 10 {
		t.Fatalf("want one unwritten pair: %v %+v", r.Valid, d)
	}
	if !strings.Contains(r.Error, "which no update wrote") {
		t.Errorf("error %q", r.Error)
	}
	// A failed update's data was never written.
	b = clean()
	b.Applied(5010, 10, key, 4, dig(2))
	if r := run(t, CheckConsistent, b, nil); r.Valid != checker.Invalid {
		t.Errorf("a failed update's data accepted")
	}
}

func TestConsistentInfoUpdate(t *testing.T) {
	b := clean()
	// The answer of process 1's update of 7 is lost; it landed as version 4.
	b.Update(5010, 5020, 1, history.Info, key, 7, 3, 0, "")
	b.Applied(5030, 10, key, 4, dig(7)).Applied(5031, 11, key, 4, dig(7))
	var d ConsistentDetails
	if r := run(t, CheckConsistent, b, &d); r.Valid != checker.Valid || d.UnknownUpdates != 1 {
		t.Fatalf("an info update's data rejected: %v %s %+v", r.Valid, r.Error, d)
	}
	// Another lost update's data, under the same version 4: each pair is
	// written by the rule, but version 4 cannot have both data.
	b.Update(5040, 5050, 0, history.Info, key, 8, 3, 0, "")
	b.Applied(5060, 12, key, 4, dig(8))
	r := run(t, CheckConsistent, b, &d)
	if r.Valid != checker.Invalid || d.ViolationCount != 1 || d.Violations[0].Kind != KindConflictingDigest ||
		d.Violations[0].Process != 12 || d.Violations[0].Other != dig(7) {
		t.Fatalf("want a conflict on version 4: %v %+v", r.Valid, d)
	}
}

func TestConsistentConflicts(t *testing.T) {
	// Clients disagree on the initial config.
	b := clean()
	b.Watch(5010, 5011, 12, key, 0, history.ConfigDigest([]byte("other\n")))
	var d ConsistentDetails
	r := run(t, CheckConsistent, b, &d)
	if r.Valid != checker.Invalid || d.ViolationCount != 1 || d.Violations[0].Kind != KindConflictingDigest ||
		d.Violations[0].Version != 0 || d.Violations[0].Other != d0 || !strings.Contains(d.Violations[0].OtherSource, "process 10") {
		t.Fatalf("want a version-0 conflict: %v %+v", r.Valid, d)
	}
	if !strings.Contains(r.Error, "one version, two data") {
		t.Errorf("error %q", r.Error)
	}
	// A client applies an ok update's version with an info update's data.
	b = clean()
	b.Update(5010, 5020, 1, history.Info, key, 7, 3, 0, "")
	b.Applied(5030, 10, key, 2, dig(7)).Applied(5031, 11, key, 2, dig(7))
	r = run(t, CheckConsistent, b, &d)
	if r.Valid != checker.Invalid || d.ViolationCount != 1 || d.Violations[0].Other != dig(3) ||
		!strings.Contains(d.Violations[0].OtherSource, "update of process 1") {
		t.Fatalf("want one conflict with the ok update of version 2 (reported once): %v %+v", r.Valid, d)
	}
}

func TestCASBlindWrite(t *testing.T) {
	b := clean()
	// Process 1 read version 1 but its write produced version 4: it
	// overwrote versions 2 and 3 without reading them.
	b.Update(5010, 5020, 1, history.OK, key, 8, 1, 4, dig(8))
	var d CASDetails
	r := run(t, CheckCAS, b, &d)
	if r.Valid != checker.Invalid || d.ViolationCount != 1 || d.Violations[0].Kind != KindBlindWrite ||
		d.Violations[0].Version != 4 || *d.Violations[0].Expected != 1 {
		t.Fatalf("want one blind write: %v %+v", r.Valid, d)
	}
	if !strings.Contains(r.Error, "never read") || *d.FirstViolationTimeNS != 5020e6 {
		t.Errorf("error %q first %v", r.Error, d.FirstViolationTimeNS)
	}
}

func TestCASDuplicateVersion(t *testing.T) {
	b := clean()
	// Both read version 3 and both were told they wrote version 4.
	b.Update(5010, 5020, 0, history.OK, key, 8, 3, 4, dig(8))
	b.Update(5030, 5040, 1, history.OK, key, 9, 3, 4, dig(9))
	var d CASDetails
	r := run(t, CheckCAS, b, &d)
	if r.Valid != checker.Invalid || d.ViolationCount != 1 || d.Violations[0].Kind != KindDuplicateVersion ||
		d.Violations[0].Process != 1 || *d.Violations[0].OtherProcess != 0 {
		t.Fatalf("want one duplicate version: %v %+v", r.Valid, d)
	}
	if !strings.Contains(r.Error, "one of them was lost") {
		t.Errorf("error %q", r.Error)
	}
}

func TestCASUnjudged(t *testing.T) {
	b := clean()
	// Info updates are not judged, whatever they claim to be based on.
	b.Update(5010, 5020, 1, history.Info, key, 7, 0, 0, "")
	var d CASDetails
	if r := run(t, CheckCAS, b, &d); r.Valid != checker.Valid || d.UnknownUpdates != 1 || d.OKUpdates != 3 || d.FailedUpdates != 1 {
		t.Fatalf("info update: %v %+v", r.Valid, d)
	}
	// An ok update that does not say what it read cannot be judged.
	b.Add(5030, 1, history.Invoke, history.FUpdate, key, &history.Value{N: history.Int64(8)}, "")
	b.Add(5040, 1, history.OK, history.FUpdate, key, checktest.ConfigV(4, dig(8)), "")
	if r := run(t, CheckCAS, b, &d); r.Valid != checker.Unknown || d.Unjudged != 1 {
		t.Fatalf("unjudged ok update: %v %+v", r.Valid, d)
	}
	// The initial config, were it recorded as an ok update of version 0,
	// is not judged.
	b = clean()
	b.Add(5030, 2, history.Invoke, history.FUpdate, key, &history.Value{N: history.Int64(0)}, "")
	b.Add(5040, 2, history.OK, history.FUpdate, key, checktest.ConfigV(0, d0), "")
	if r := run(t, CheckCAS, b, &d); r.Valid != checker.Valid || d.Initial != 1 {
		t.Fatalf("initial config as an update: %v %s %+v", r.Valid, r.Error, d)
	}
	// No update at all: nothing to judge, and nothing wrong.
	b = &checktest.Timeline{}
	b.Watch(0, 1, 10, key, 0, d0)
	if r := run(t, CheckCAS, b, &d); r.Valid != checker.Valid || d.Note == "" {
		t.Fatalf("no updates: %v %+v", r.Valid, d)
	}
}

func TestConvergenceFigures(t *testing.T) {
	var d ConvergenceDetails
	r := run(t, CheckConvergence, clean(), &d)
	if r.Valid != checker.Valid {
		t.Fatalf("%v: %s", r.Valid, r.Error)
	}
	if len(d.Finals) != 1 || d.Finals[0].Version != 3 || d.LiveClients != 2 || d.BoundMS != 3000 {
		t.Errorf("details: %+v", d)
	}
	// Client 10 applied before the answer (0 ms), client 11 490 ms after.
	if d.MaxConvergenceMS == nil || *d.MaxConvergenceMS != 490 || *d.MedianConvergenceMS != 490 ||
		*d.Clients[0].ConvergenceMS != 0 {
		t.Errorf("figures: max %v median %v clients %+v", d.MaxConvergenceMS, d.MedianConvergenceMS, d.Clients)
	}
}

func TestConvergenceViolations(t *testing.T) {
	// Client 12 watches from the start, then never moves past version 1.
	b := clean()
	b.Watch(5002, 5003, 12, key, 1, dig(1))
	b.Add(9000, 0, history.Invoke, history.FReadConfig, key, nil, "")
	b.Add(9001, 0, history.OK, history.FReadConfig, key, checktest.ConfigV(3, dig(4)), "")
	var d ConvergenceDetails
	r := run(t, CheckConvergence, b, &d)
	if r.Valid != checker.Invalid || d.ViolationCount != 1 || d.Violations[0].Kind != KindNever ||
		d.Violations[0].Process != 12 || *d.Violations[0].LastVersion != 1 || d.Violations[0].DeadlineNS != 8002e6 {
		t.Fatalf("want client 12 never converging: %v %+v", r.Valid, d)
	}
	if !strings.Contains(r.Error, "never applied the final version 3") {
		t.Errorf("error %q", r.Error)
	}
	// It applies it, but late.
	b.Applied(9002, 12, key, 3, dig(4))
	r = run(t, CheckConvergence, b, &d)
	if r.Valid != checker.Invalid || d.Violations[0].Kind != KindLate || *d.MaxConvergenceMS != 4000 {
		t.Fatalf("want a late client: %v %+v", r.Valid, d)
	}
	// Retired (its last event an info completion), it is not judged.
	b.Add(9003, 12, history.Invoke, history.FWatch, key, nil, "")
	b.Add(9004, 12, history.Info, history.FWatch, key, nil, "timeout")
	r = run(t, CheckConvergence, b, &d)
	if r.Valid != checker.Valid || d.RetiredClients != 1 {
		t.Fatalf("a retired client judged: %v %s %+v", r.Valid, r.Error, d)
	}
}

func TestConvergenceUnknown(t *testing.T) {
	r := CheckConvergence(context.Background(), checker.Input{History: clean().Events})
	if r.Valid != checker.Unknown || !strings.Contains(r.Error, "session timeout") {
		t.Errorf("no session timeout: %v %q", r.Valid, r.Error)
	}
	b := &checktest.Timeline{}
	b.Watch(0, 1, 10, key, 0, d0)
	b.Update(5, 10, 0, history.Fail, key, 1, 5, 0, "")
	if r := run(t, CheckConvergence, b, nil); r.Valid != checker.Unknown || !strings.Contains(r.Error, "no config update answered ok") {
		t.Errorf("no ok update: %v %q", r.Valid, r.Error)
	}
	// The history ends 1 s after the final update, before the bound.
	b = &checktest.Timeline{}
	b.Watch(0, 1, 10, key, 0, d0)
	b.Update(5, 10, 0, history.OK, key, 1, 0, 1, dig(1))
	b.Add(1000, 10, history.Invoke, history.FApplied, key, checktest.ConfigV(0, d0), "")
	b.Add(1000, 10, history.OK, history.FApplied, key, checktest.ConfigV(0, d0), "")
	var d ConvergenceDetails
	if r := run(t, CheckConvergence, b, &d); r.Valid != checker.Unknown || len(d.Undecided) != 1 {
		t.Errorf("undecided client: %v %q %+v", r.Valid, r.Error, d)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range All() {
		if r := c.Check(ctx, checker.Input{History: clean().Events, SessionTimeout: time.Second}); r.Valid != checker.Unknown {
			t.Errorf("%s ignored a cancelled context: %v", c.Name, r.Valid)
		}
	}
}
