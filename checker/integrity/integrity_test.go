package integrity

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

func run(t *testing.T, in checker.Input) (checker.Result, Details) {
	t.Helper()
	r := Check(context.Background(), in)
	d, ok := r.Details.(Details)
	if !ok {
		t.Fatalf("details are %T (%s)", r.Details, r.Error)
	}
	return r, d
}

// wantProblem demands unknown with exactly the given problem kind (and
// count) and a reason naming it.
func wantProblem(t *testing.T, what string, in checker.Input, kind string, n int) Details {
	t.Helper()
	r, d := run(t, in)
	if r.Valid != checker.Unknown || d.ProblemCounts[kind] != n || len(d.ProblemCounts) != 1 {
		t.Fatalf("%s: valid=%v counts=%v, want unknown with %d %s\n%s", what, r.Valid, d.ProblemCounts, n, kind, r.Error)
	}
	if !strings.Contains(r.Error, kind) || !strings.Contains(r.Error, d.Problems[0].Message) {
		t.Errorf("%s: error %q does not say what is wrong", what, r.Error)
	}
	return d
}

// clean is a sound history and its apply log: sections by two workers, an
// instant event while an operation is open, a nemesis that records an
// undo before the injection's own completion, an operation left open at
// the end, a controller's final read.
func clean() (*checktest.Hist, *checktest.Log) {
	b := &checktest.Hist{}
	b.Section(0, "k", 1, 0, -1)
	b.Inv(1, history.FAcquire, "k").Instant(1, history.FSession, "", &history.Value{State: "disconnected"}).Acquired(1, "k", 2)
	b.Ev(-1, history.Invoke, history.FPause, "", nil, "").Ev(-1, history.Invoke, history.FResume, "", nil, "")
	b.Instant(-1, history.FSessionGone, "", &history.Value{TargetProcess: history.Int(0)})
	b.Ev(-1, history.OK, history.FPause, "", nil, "").Ev(-1, history.OK, history.FResume, "", nil, "")
	b.Read(1, "k", 2, 1, 1).Write(1, "k", 2, 2).Release(1, "k")
	b.Inv(2, history.FAcquire, "k")
	b.Inv(1, history.FFinalRead, "k").Ev(1, history.OK, history.FFinalRead, "k", &history.Value{N: checktest.I64(2)}, "")
	l := &checktest.Log{}
	l.R("k", 1, 0, 0).W("k", 1, 0, 1).R("k", 2, 1, 1).W("k", 2, 1, 2)
	l.Entries = append(l.Entries, register.Entry{Seq: 5, Op: register.OpRead, Key: "k", Value: 2, Process: 1, Accepted: true})
	return b, l
}

func TestIntegrityClean(t *testing.T) {
	b, l := clean()
	r, d := run(t, checker.Input{History: b.Events, ApplyLog: l.Entries})
	if r.Valid != checker.Valid || d.Attributed != 5 || d.OpenAtEnd != 1 {
		t.Fatalf("clean: %v %s %+v", r.Valid, r.Error, d)
	}
	// Simulated runs with unknown outcomes, stale writes and late answers
	// are sound too.
	for seed := range uint64(5) {
		es, log := checktest.GenLockHistory(checktest.GenSpec{Seed: seed, Events: 3000, Keys: 3, WorkersPerKey: 3,
			InfoShare: 0.2, StaleShare: 0.05, Mode: register.ModeOn})
		if r, _ := run(t, checker.Input{History: es, ApplyLog: log}); r.Valid != checker.Valid {
			t.Fatalf("seed %d: %v %s", seed, r.Valid, r.Error)
		}
	}
}

// An empty history beside a non-empty apply log is no evidence of
// anything: every entry is unexplained.
func TestIntegrityEmptyHistory(t *testing.T) {
	_, l := clean()
	r, d := run(t, checker.Input{ApplyLog: l.Entries})
	if r.Valid != checker.Unknown || d.ProblemCounts[KindEmptyHistory] != 1 || d.ProblemCounts[KindUnattributed] != 5 {
		t.Fatalf("empty history: %v %v", r.Valid, d.ProblemCounts)
	}
	if !strings.Contains(r.Error, "the history is empty but the register's apply log has 5 entries") {
		t.Errorf("error %q", r.Error)
	}
	if r, _ := run(t, checker.Input{}); r.Valid != checker.Valid {
		t.Errorf("nothing at all is not broken (other checkers say it proves nothing): %v", r.Valid)
	}
}

func TestIntegrityIndexes(t *testing.T) {
	b, l := clean()
	dup := append([]history.Event(nil), b.Events...)
	dup[5].Index = 4 // two events claim index 4; index 5 is missing
	r, d := run(t, checker.Input{History: dup, ApplyLog: l.Entries})
	if r.Valid != checker.Unknown || d.ProblemCounts[KindDuplicateIndex] != 1 {
		t.Fatalf("duplicate index: %v %v", r.Valid, d.ProblemCounts)
	}
	gap := append(append([]history.Event(nil), b.Events[:3]...), b.Events[4:]...)
	// Dropping an event (process 0's read answer) also leaves the read
	// open when the write is invoked: both are reported.
	r, d = run(t, checker.Input{History: gap, ApplyLog: l.Entries})
	if r.Valid != checker.Unknown || d.ProblemCounts[KindIndexGap] != 1 || d.ProblemCounts[KindDoubleInvocation] != 1 {
		t.Fatalf("gap: %v %v", r.Valid, d.ProblemCounts)
	}
	back := append([]history.Event(nil), b.Events...)
	back[6].Time = back[5].Time - 1
	wantProblem(t, "time going back", checker.Input{History: back, ApplyLog: l.Entries}, KindTimeOrder, 1)
}

func TestIntegrityPairing(t *testing.T) {
	_, l := clean()
	in := func(b *checktest.Hist) checker.Input { return checker.Input{History: b.Events, ApplyLog: l.Entries} }
	base := func() *checktest.Hist { b, _ := clean(); return b }

	b := base()
	b.Ev(3, history.OK, history.FRead, "k", nil, "") // process 3 never invoked anything
	wantProblem(t, "unmatched", in(b), KindUnmatched, 1)

	b = base()
	b.Ev(4, history.OK, history.FAcquire, "k", checktest.TokV(9), "").Inv(4, history.FAcquire, "k")
	wantProblem(t, "completion before invocation", in(b), KindEarlyCompletion, 1)

	// On the clock: the answer is stamped before its request (the clock
	// also goes back, which is reported too).
	early := (&checktest.Hist{}).Inv(5, history.FAcquire, "k").Ev(5, history.OK, history.FAcquire, "k", nil, "")
	early.Events[1].Time = early.Events[0].Time - 1
	r, d := run(t, checker.Input{History: early.Events})
	if r.Valid != checker.Unknown || d.ProblemCounts[KindEarlyCompletion] != 1 || d.ProblemCounts[KindTimeOrder] != 1 {
		t.Fatalf("completion earlier on the clock: %v %v", r.Valid, d.ProblemCounts)
	}

	b = base()
	b.Inv(6, history.FAcquire, "k").Ev(6, history.OK, history.FRelease, "k", nil, "")
	wantProblem(t, "mismatched", in(b), KindMismatched, 1)

	b = base()
	b.Inv(7, history.FAcquire, "k").Inv(7, history.FRead, "k")
	wantProblem(t, "double invocation", in(b), KindDoubleInvocation, 1)
}

func TestIntegrityAttribution(t *testing.T) {
	b, l := clean()
	log := func(es ...register.Entry) []register.Entry {
		out := append([]register.Entry(nil), l.Entries...)
		for _, e := range es {
			e.Seq = int64(len(out) + 1)
			out = append(out, e)
		}
		return out
	}
	cases := []struct {
		name string
		e    register.Entry
		msg  string
	}{
		{"wrong value", register.Entry{Op: register.OpWrite, Key: "k", Value: 9, Token: 2, HasToken: true, Process: 1, Accepted: true},
			"write k of 9 with token 2 by process 1 matches no write"},
		{"one invocation, two entries", register.Entry{Op: register.OpWrite, Key: "k", Value: 2, Token: 2, HasToken: true, Process: 1, Accepted: true},
			"matches no write"},
		{"unknown process", register.Entry{Op: register.OpRead, Key: "k", Value: 2, Token: 2, HasToken: true, Process: 42, Accepted: true},
			"process 42, a process the history never mentions"},
		{"other key", register.Entry{Op: register.OpRead, Key: "j", Value: 0, Token: 2, HasToken: true, Process: 1, Accepted: true},
			"read j with token 2 by process 1"},
	}
	for _, c := range cases {
		d := wantProblem(t, c.name, checker.Input{History: b.Events, ApplyLog: log(c.e)}, KindUnattributed, 1)
		if p := d.Problems[0]; p.Seq != 6 || !strings.Contains(p.Message, c.msg) {
			t.Errorf("%s: problem %+v, want seq 6 and %q", c.name, p, c.msg)
		}
	}
	// Committed (by the register's clock) a second before it was invoked.
	timed := append([]register.Entry(nil), l.Entries...)
	start := int64(1_000_000_000_000)
	for i := range timed {
		timed[i].Wall = start + int64(i)
	}
	if r, _ := run(t, checker.Input{History: b.Events, ApplyLog: timed, StartWall: start}); r.Valid != checker.Valid {
		t.Fatalf("timed log: %v %s", r.Valid, r.Error)
	}
	timed[3].Wall = start - 2_000_000_000
	wantProblem(t, "committed before invoked", checker.Input{History: b.Events, ApplyLog: timed, StartWall: start}, KindUnattributed, 1)
}

// Counts are exact when the list is cut.
func TestIntegrityCounts(t *testing.T) {
	b := &checktest.Hist{}
	for range 3 * maxListed {
		b.Ev(1, history.OK, history.FRead, "k", nil, "")
	}
	d := wantProblem(t, "many", checker.Input{History: b.Events}, KindUnmatched, 3*maxListed)
	if len(d.Problems) != maxListed || d.ProblemsOmitted != 2*maxListed {
		t.Errorf("listed %d, omitted %d", len(d.Problems), d.ProblemsOmitted)
	}
}

// TestOpenAtEnd: the invocations a resumed soak completes as info are
// exactly those the integrity check counts open at the end: here the
// acquire of process 2 in clean(), and a nemesis fault left open.
func TestOpenAtEnd(t *testing.T) {
	b, l := clean()
	b.Ev(-1, history.Invoke, history.FPause, "", nil, "")
	_, d := run(t, checker.Input{History: b.Events, ApplyLog: l.Entries})
	open := OpenAtEnd(b.Events)
	if len(open) != d.OpenAtEnd || len(open) != 2 {
		t.Fatalf("open at the end: %+v; the check counts %d, want 2", open, d.OpenAtEnd)
	}
	if open[0].Process != 2 || open[0].F != history.FAcquire || open[1].Process != history.Nemesis || open[0].Index > open[1].Index {
		t.Errorf("open at the end: %+v, want process 2's acquire then the nemesis pause", open)
	}
}

// TestIntegrityTaskRetries: a claim or complete whose reply was lost is
// sent again under the same term while its invocation is unanswered, and
// the register logs every copy. Up to register.MaxTaskRetries copies are
// the one invocation's; one more, a copy under another term, or one
// committed after the answer, is not.
func TestIntegrityTaskRetries(t *testing.T) {
	const task, term = "billing:t1", 7
	start := int64(1_000_000_000_000)
	ms := int64(time.Millisecond)
	// Process 1 invokes a complete at 10 ms and is answered at 20 s (it
	// retried while the register stalled); it invokes nothing after.
	h := []history.Event{
		{Index: 0, Time: 10 * ms, Process: 1, Type: history.Invoke, F: history.FComplete, Key: task},
		{Index: 1, Time: 20_000 * ms, Process: 1, Type: history.OK, F: history.FComplete, Key: task, Value: checktest.TokV(term)},
	}
	entry := func(seq int64, atMS int64, token int64) register.Entry {
		return register.Entry{Seq: seq, Wall: start + atMS*ms, Op: register.OpComplete, Task: task, Token: token, HasToken: true, Process: 1, Accepted: true}
	}
	copies := func(n int, token int64, lastAtMS int64) []register.Entry {
		var log []register.Entry
		for i := range n {
			log = append(log, entry(int64(i+1), int64(5_000*(i+1)), term))
		}
		log[n-1].Token, log[n-1].Wall = token, start+lastAtMS*ms
		return log
	}
	in := func(log []register.Entry) checker.Input {
		return checker.Input{History: h, ApplyLog: log, StartWall: start}
	}
	n := 1 + register.MaxTaskRetries
	if r, d := run(t, in(copies(n, term, int64(5_000*n)))); r.Valid != checker.Valid || d.Attributed != n {
		t.Fatalf("%d copies under one term before the answer: %v (%d attributed) %s", n, r.Valid, d.Attributed, r.Error)
	}
	wantProblem(t, "one copy too many", in(copies(n+1, term, int64(5_000*(n+1)))), KindUnattributed, 1)
	wantProblem(t, "a copy under another term", in(copies(2, term+1, 10_000)), KindUnattributed, 1)
	wantProblem(t, "a copy committed after the answer", in(copies(2, term, 22_000)), KindUnattributed, 1)
	// Answered info, the invocation stays open: the worker may still be
	// retrying when the controller has given up on it.
	h[1].Type, h[1].Value = history.Info, nil
	if r, _ := run(t, in(copies(2, term, 60_000))); r.Valid != checker.Valid {
		t.Fatalf("a copy after an info answer: %v %s", r.Valid, r.Error)
	}
}
