package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/register"
)

// logBuilder makes apply logs by hand, numbering Seq from 1 as the
// register does.
type logBuilder struct{ es []register.Entry }

func (b *logBuilder) add(op, key string, token int64, process int, value int64, accepted bool) *logBuilder {
	seq := int64(len(b.es) + 1)
	b.es = append(b.es, register.Entry{Seq: seq, Wall: 1_000_000_000 + seq*1000, Op: op, Key: key,
		Token: token, HasToken: true, Value: value, Process: process, Accepted: accepted, Mode: register.ModeOff})
	return b
}
func (b *logBuilder) w(key string, token int64, process int, value int64) *logBuilder {
	return b.add(register.OpWrite, key, token, process, value, true)
}
func (b *logBuilder) rejW(key string, token int64, process int, value int64) *logBuilder {
	return b.add(register.OpWrite, key, token, process, value, false)
}
func (b *logBuilder) r(key string, token int64, process int, value int64) *logBuilder {
	return b.add(register.OpRead, key, token, process, value, true)
}
func (b *logBuilder) rejR(key string, token int64, process int, value int64) *logBuilder {
	return b.add(register.OpRead, key, token, process, value, false)
}

func runDW(t *testing.T, in Input) (Result, DoubleWriterDetails) {
	t.Helper()
	r := CheckDoubleWriter(context.Background(), in)
	d, ok := r.Details.(DoubleWriterDetails)
	if !ok {
		t.Fatalf("details are %T", r.Details)
	}
	return r, d
}

func kinds(d DoubleWriterDetails) []string {
	var out []string
	for _, v := range d.Violations {
		out = append(out, v.Kind)
	}
	return out
}

func TestDoubleWriterClean(t *testing.T) {
	b := &logBuilder{}
	// Two keys, grants hand over cleanly; grant 1 writes three times (a
	// holder may write several times under one grant); stale holders are
	// rejected, and their rejected entries carry wrong values and lower
	// tokens, which must not count.
	b.r("SKU-1", 1, 0, 0).w("SKU-1", 1, 0, 1).w("SKU-1", 1, 0, 2).w("SKU-1", 1, 0, 3)
	b.r("SKU-2", 1, 1, 0).w("SKU-2", 1, 1, 1)
	b.r("SKU-1", 2, 1, 3).w("SKU-1", 2, 1, 4)
	b.rejW("SKU-1", 1, 0, 3).rejR("SKU-1", 1, 0, 4).rejW("SKU-1", 1, 0, 99)
	b.r("SKU-1", 3, 2, 4).w("SKU-1", 3, 2, 5)
	b.rejW("SKU-2", 0, 5, 1)
	b.w("SKU-2", 4, 3, 2)
	r, d := runDW(t, Input{ApplyLog: b.es})
	if r.Valid != Valid || len(d.Violations) != 0 {
		t.Fatalf("clean log: valid=%v violations=%+v error=%q", r.Valid, d.Violations, r.Error)
	}
	if d.TokenRejections != 4 {
		t.Errorf("token rejections = %d, want 4", d.TokenRejections)
	}
	k := d.Keys["SKU-1"]
	if k.RejectedWrites != 2 || k.RejectedReads != 1 || k.AcceptedWrites != 5 || k.Grants != 3 || k.FinalValue != 5 {
		t.Errorf("SKU-1 summary = %+v", k)
	}
	if d.Keys["SKU-2"].RejectedWrites != 1 {
		t.Errorf("SKU-2 summary = %+v", d.Keys["SKU-2"])
	}
	if d.FirstViolationSeq != 0 {
		t.Errorf("first violation seq = %d on a clean log", d.FirstViolationSeq)
	}
}

func TestDoubleWriterKinds(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *logBuilder)
		kind  string
		seqs  []int64
	}{
		{"token-regression", func(b *logBuilder) {
			b.w("K", 6, 1, 1).w("K", 5, 2, 2)
		}, KindTokenRegression, []int64{1, 2}},
		{"interleaved-grants", func(b *logBuilder) {
			// The same token handed to two processes (a buggy recipe):
			// tokens never go down and the counter is intact, yet the
			// first holder writes after the second.
			b.w("K", 5, 1, 1).w("K", 5, 2, 2).w("K", 5, 1, 3)
		}, KindInterleavedGrants, []int64{1, 2, 3}},
		{"lost-update", func(b *logBuilder) {
			b.w("K", 5, 1, 1).w("K", 6, 2, 1)
		}, KindLostUpdate, []int64{1, 2}},
		{"lost-update-first-write", func(b *logBuilder) {
			b.w("K", 5, 1, 3)
		}, KindLostUpdate, []int64{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &logBuilder{}
			c.build(b)
			// Rejected noise around the violation changes nothing.
			b.rejW("K", 0, 9, 42).rejR("K", 0, 9, 0)
			r, d := runDW(t, Input{ApplyLog: b.es})
			if r.Valid != Invalid {
				t.Fatalf("valid = %v, want false", r.Valid)
			}
			if got := kinds(d); len(got) != 1 || got[0] != c.kind {
				t.Fatalf("violations = %v, want exactly [%s]", got, c.kind)
			}
			v := d.Violations[0]
			if fmt.Sprint(v.Seqs) != fmt.Sprint(c.seqs) || len(v.Entries) != len(c.seqs) || v.Key != "K" || v.Message == "" {
				t.Errorf("violation = %+v, want seqs %v", v, c.seqs)
			}
			if d.ViolationCounts[c.kind] != 1 {
				t.Errorf("counts = %v", d.ViolationCounts)
			}
			if d.FirstViolationSeq != c.seqs[len(c.seqs)-1] {
				t.Errorf("first violation seq = %d, want %d", d.FirstViolationSeq, c.seqs[len(c.seqs)-1])
			}
		})
	}
}

func TestLostUpdateEvidence(t *testing.T) {
	b := (&logBuilder{}).w("K", 5, 1, 1).w("K", 6, 2, 1)
	_, d := runDW(t, Input{ApplyLog: b.es})
	v := d.Violations[0]
	if *v.Expected != 2 || *v.Actual != 1 || fmt.Sprint(v.Processes) != "[1 2]" || fmt.Sprint(v.Tokens) != "[5 6]" {
		t.Errorf("violation = %+v", v)
	}
}

func TestInterleavedReportsBothGrants(t *testing.T) {
	// Fencing off: the stale holder's write is a regression and an
	// interleaving, and the counter also breaks.
	b := (&logBuilder{}).w("K", 5, 1, 1).w("K", 6, 2, 2).w("K", 5, 1, 2)
	_, d := runDW(t, Input{ApplyLog: b.es})
	var il *Violation
	for i := range d.Violations {
		if d.Violations[i].Kind == KindInterleavedGrants {
			il = &d.Violations[i]
		}
	}
	if il == nil {
		t.Fatalf("no interleaving in %v", kinds(d))
	}
	if fmt.Sprint(il.Tokens) != "[5 6 5]" || fmt.Sprint(il.Processes) != "[1 2 1]" || fmt.Sprint(il.Seqs) != "[1 2 3]" {
		t.Errorf("interleaving = %+v", il)
	}
	if d.ViolationCounts[KindTokenRegression] != 1 || d.ViolationCounts[KindLostUpdate] != 1 {
		t.Errorf("counts = %v", d.ViolationCounts)
	}
}

func TestGrantMayResumeOnlyUntilSuperseded(t *testing.T) {
	// A, then B, then C: A never writes again, so nothing interleaves;
	// then B writes after C did.
	b := (&logBuilder{}).w("K", 5, 1, 1).w("K", 5, 1, 2).w("K", 5, 2, 3).w("K", 5, 3, 4).w("K", 5, 2, 5)
	_, d := runDW(t, Input{ApplyLog: b.es})
	if got := kinds(d); len(got) != 1 || got[0] != KindInterleavedGrants || fmt.Sprint(d.Violations[0].Seqs) != "[3 4 5]" {
		t.Fatalf("violations = %+v", d.Violations)
	}
}

func TestDoubleWriterUnsortedLog(t *testing.T) {
	b := (&logBuilder{}).w("K", 1, 1, 1).w("K", 2, 2, 2).w("K", 3, 3, 3)
	b.es[0], b.es[2] = b.es[2], b.es[0]
	r, _ := runDW(t, Input{ApplyLog: b.es})
	if r.Valid != Valid {
		t.Fatalf("valid = %v (%s)", r.Valid, r.Error)
	}
	if b.es[0].Seq != 3 {
		t.Error("the caller's log was reordered")
	}
}

func okWrite(p history.Process, key string, token, n int64, at int64) []history.Event {
	return []history.Event{
		{Time: at - 10, Process: p, Type: history.Invoke, F: history.FWrite, Key: key, Value: &history.Value{N: history.Int64(n)}},
		{Time: at, Process: p, Type: history.OK, F: history.FWrite, Key: key, Value: &history.Value{N: history.Int64(n), Token: history.Int64(token)}},
	}
}

func TestDoubleWriterUnknown(t *testing.T) {
	hist := okWrite(0, "K", 1, 1, 100)
	r, d := runDW(t, Input{History: hist})
	if r.Valid != Unknown || d.Reason == "" || !strings.Contains(r.Error, "empty") {
		t.Fatalf("empty log with ok writes: valid=%v reason=%q", r.Valid, d.Reason)
	}
	// A run that wrote nothing proves nothing: it must not pass a gate.
	if r, _ := runDW(t, Input{}); r.Valid != Unknown || !strings.Contains(r.Error, "exercised nothing") {
		t.Errorf("nothing at all: valid=%v (%s), want unknown", r.Valid, r.Error)
	}
	// The log has fewer accepted writes than the workers saw succeed.
	hist = append(hist, okWrite(1, "K", 2, 2, 200)...)
	b := (&logBuilder{}).w("K", 1, 0, 1)
	if r, _ := runDW(t, Input{History: hist, ApplyLog: b.es}); r.Valid != Unknown {
		t.Errorf("incomplete log: valid=%v, want unknown", r.Valid)
	}
	// A gap in Seq.
	b = (&logBuilder{}).w("K", 1, 0, 1).r("K", 2, 1, 1).w("K", 2, 1, 2)
	b.es = append(b.es[:1], b.es[2:]...)
	r, d = runDW(t, Input{ApplyLog: b.es})
	if r.Valid != Unknown || len(d.SeqProblems) == 0 {
		t.Errorf("gap: valid=%v problems=%v", r.Valid, d.SeqProblems)
	}
	// Evidence of a violation stands even on a damaged log.
	b = (&logBuilder{}).w("K", 1, 0, 1).w("K", 2, 1, 1)
	if r, _ := runDW(t, Input{History: append(hist, okWrite(3, "K", 3, 3, 300)...), ApplyLog: b.es}); r.Valid != Invalid {
		t.Errorf("violation on incomplete log: valid=%v, want false", r.Valid)
	}
}

func TestFirstViolationTimes(t *testing.T) {
	b := (&logBuilder{}).w("K", 5, 1, 1).w("K", 6, 2, 1)
	hist := append(okWrite(1, "K", 5, 1, 100), okWrite(2, "K", 6, 1, 250)...)
	start := b.es[0].Wall - 40
	_, d := runDW(t, Input{History: hist, ApplyLog: b.es, StartWall: start})
	if d.FirstViolationSeq != 2 {
		t.Fatalf("first seq = %d", d.FirstViolationSeq)
	}
	if d.FirstViolationAfterNS == nil || *d.FirstViolationAfterNS != b.es[1].Wall-start {
		t.Errorf("after ns = %v", d.FirstViolationAfterNS)
	}
	if d.FirstViolationTimeNS == nil || *d.FirstViolationTimeNS != 250 {
		t.Errorf("history time = %v", d.FirstViolationTimeNS)
	}
	_, d = runDW(t, Input{ApplyLog: b.es})
	if d.FirstViolationAfterNS != nil {
		t.Errorf("after ns without StartWall = %v", *d.FirstViolationAfterNS)
	}
}

func TestMaxViolations(t *testing.T) {
	b := &logBuilder{}
	for i := 0; i < 10; i++ {
		b.w("K", int64(i), i, 1)
	}
	_, d := runDW(t, Input{ApplyLog: b.es, MaxViolations: 3})
	if len(d.Violations) != 3 || d.ViolationsOmitted != 6 || d.ViolationCounts[KindLostUpdate] != 9 {
		t.Errorf("kept %d omitted %d counts %v", len(d.Violations), d.ViolationsOmitted, d.ViolationCounts)
	}
}

func TestMerge(t *testing.T) {
	cases := []struct {
		in   []Validity
		want Validity
	}{
		{nil, Valid},
		{[]Validity{Valid}, Valid},
		{[]Validity{Unknown}, Unknown},
		{[]Validity{Invalid}, Invalid},
		{[]Validity{Valid, Unknown}, Unknown},
		{[]Validity{Unknown, Valid}, Unknown},
		{[]Validity{Valid, Invalid}, Invalid},
		{[]Validity{Unknown, Invalid}, Invalid},
		{[]Validity{Invalid, Unknown, Valid}, Invalid},
		{[]Validity{Valid, Valid}, Valid},
	}
	for _, c := range cases {
		if got := Merge(c.in...); got != c.want {
			t.Errorf("Merge(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestValidityJSON(t *testing.T) {
	for v, want := range map[Validity]string{Valid: "true", Invalid: "false", Unknown: `"unknown"`} {
		b, err := json.Marshal(v)
		if err != nil || string(b) != want {
			t.Fatalf("marshal %v = %s, %v", v, b, err)
		}
		var back Validity = 99
		if err := json.Unmarshal(b, &back); err != nil || back != v {
			t.Errorf("round trip %s = %v, %v", b, back, err)
		}
	}
	for _, bad := range []string{`"true"`, `1`, `null`, `"valid"`} {
		var v Validity
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("unmarshal %s: no error", bad)
		}
	}
	var zero Validity
	if zero != Unknown {
		t.Error("the zero Validity must be unknown")
	}
}

func TestValidateGate(t *testing.T) {
	if err := ValidateGate([]string{NameDoubleWriter, NameStats}); err != nil {
		t.Fatal(err)
	}
	if err := ValidateGate(nil); err != nil {
		t.Fatal(err)
	}
	err := ValidateGate([]string{NameDoubleWriter, "mutexx"})
	if err == nil || !strings.Contains(err.Error(), `"mutexx"`) || !strings.Contains(err.Error(), NameDoubleWriter) {
		t.Fatalf("err = %v", err)
	}
}

func TestRunAllRecoversPanics(t *testing.T) {
	cs := []Checker{
		{Name: "boom", Check: func(context.Context, Input) Result { panic("kaboom") }},
		{Name: "fine", Check: func(context.Context, Input) Result { return Result{Valid: Valid} }},
	}
	res := runAll(context.Background(), Input{}, []string{"boom", "fine"}, cs)
	b := res.Checkers["boom"]
	if b.Valid != Unknown || !strings.Contains(b.Error, "kaboom") || !b.Gating {
		t.Fatalf("panicking checker = %+v", b)
	}
	if res.Valid != Unknown || len(res.Reasons) != 1 {
		t.Errorf("verdict = %v reasons=%v, want unknown", res.Valid, res.Reasons)
	}
	if res := runAll(context.Background(), Input{}, []string{"fine"}, cs); res.Valid != Valid || res.Checkers["boom"].Gating {
		t.Errorf("ungated panic changed the verdict: %v", res.Valid)
	}
	if res := runAll(context.Background(), Input{}, []string{"fine", "absent"}, cs); res.Valid != Unknown {
		t.Errorf("absent gating checker: verdict %v, want unknown", res.Valid)
	}
}

func TestRunAllBudget(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	cs := []Checker{{Name: "stuck", Check: func(context.Context, Input) Result { <-block; return Result{Valid: Valid} }}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := runAll(ctx, Input{}, []string{"stuck"}, cs)
	if res.Valid != Unknown || res.Checkers["stuck"].Error == "" {
		t.Fatalf("stuck checker = %+v", res.Checkers["stuck"])
	}
	// The checker never returns, so only the budget can end the wait.
	res = runAll(context.Background(), Input{Budget: time.Millisecond}, []string{"stuck"}, cs)
	if res.Valid != Unknown || !strings.Contains(res.Checkers["stuck"].Error, "deadline") {
		t.Fatalf("over-budget checker = %+v", res.Checkers["stuck"])
	}
}

// lockHistory is a small run: two workers contend for SKU-1; worker 1 is
// paused by the nemesis while holding the lock, loses it, and its stale
// write lands after worker 2's (fencing off).
func lockHistory() []history.Event {
	tok := history.Int64
	v := func(f func(*history.Value)) *history.Value { x := &history.Value{}; f(x); return x }
	ev := []history.Event{
		{Time: 0, Process: 1, Type: history.Invoke, F: history.FAcquire, Key: "SKU-1"},
		{Time: 2_000_000, Process: 1, Type: history.OK, F: history.FAcquire, Key: "SKU-1", Value: v(func(x *history.Value) { x.Token = tok(5); x.Node = "/l/n-5" })},
		{Time: 2_500_000, Process: 2, Type: history.Invoke, F: history.FAcquire, Key: "SKU-1"},
		{Time: 3_000_000, Process: 1, Type: history.Invoke, F: history.FRead, Key: "SKU-1"},
		{Time: 4_000_000, Process: 1, Type: history.OK, F: history.FRead, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(0); x.Token = tok(5) })},
		{Time: 5_000_000, Process: history.Nemesis, Type: history.Invoke, F: history.FPause, Value: v(func(x *history.Value) { x.Target = "worker-1" })},
		{Time: 6_000_000, Process: history.Nemesis, Type: history.OK, F: history.FPause, Value: v(func(x *history.Value) { x.Target = "worker-1"; x.PID = 42; x.Verified = history.Bool(true) })},
		{Time: 7_000_000, Process: 1, Type: history.Invoke, F: history.FWrite, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(1) })},
		// Session event of process 2 while its acquire is in flight.
		{Time: 8_000_000, Process: 2, Type: history.Invoke, F: history.FSession, Value: v(func(x *history.Value) { x.State = "disconnected" })},
		{Time: 8_000_000, Process: 2, Type: history.OK, F: history.FSession, Value: v(func(x *history.Value) { x.State = "disconnected" })},
		{Time: 12_500_000, Process: 2, Type: history.OK, F: history.FAcquire, Key: "SKU-1", Value: v(func(x *history.Value) { x.Token = tok(6) })},
		{Time: 13_000_000, Process: 2, Type: history.Invoke, F: history.FRead, Key: "SKU-1"},
		{Time: 14_000_000, Process: 2, Type: history.OK, F: history.FRead, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(0); x.Token = tok(6) })},
		{Time: 15_000_000, Process: 2, Type: history.Invoke, F: history.FWrite, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(1) })},
		{Time: 16_000_000, Process: 2, Type: history.OK, F: history.FWrite, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(1); x.Token = tok(6) })},
		{Time: 17_000_000, Process: history.Nemesis, Type: history.Invoke, F: history.FResume, Value: v(func(x *history.Value) { x.Target = "worker-1" })},
		{Time: 18_000_000, Process: history.Nemesis, Type: history.OK, F: history.FResume, Value: v(func(x *history.Value) { x.Target = "worker-1"; x.PID = 42; x.Verified = history.Bool(false) })},
		{Time: 19_000_000, Process: 1, Type: history.Invoke, F: history.FLost, Key: "SKU-1", Value: v(func(x *history.Value) { x.State = "expired" })},
		{Time: 19_000_000, Process: 1, Type: history.OK, F: history.FLost, Key: "SKU-1", Value: v(func(x *history.Value) { x.State = "expired" })},
		{Time: 20_000_000, Process: 1, Type: history.Info, F: history.FWrite, Key: "SKU-1", Error: "timeout waiting for worker"},
		{Time: 21_000_000, Process: 2, Type: history.Invoke, F: history.FRelease, Key: "SKU-1"},
		{Time: 22_500_000, Process: 2, Type: history.OK, F: history.FRelease, Key: "SKU-1"},
		{Time: 23_000_000, Process: 1, Type: history.Invoke, F: history.FLate, Key: "SKU-1", Value: v(func(x *history.Value) { x.Of = "write" })},
		{Time: 23_000_000, Process: 1, Type: history.OK, F: history.FLate, Key: "SKU-1", Value: v(func(x *history.Value) { x.Of = "write" })},
		// Never completes.
		{Time: 24_000_000, Process: 3, Type: history.Invoke, F: history.FAcquire, Key: "SKU-1"},
		{Time: 25_000_000, Process: 2, Type: history.Invoke, F: history.FAcquire, Key: "SKU-2"},
		{Time: 26_000_000, Process: 2, Type: history.Fail, F: history.FAcquire, Key: "SKU-2", Error: "lock wait timed out"},
	}
	for i := range ev {
		ev[i].Index = int64(i)
	}
	return ev
}

func lockLog() []register.Entry {
	b := &logBuilder{}
	b.r("SKU-1", 5, 1, 0).r("SKU-1", 6, 2, 0).w("SKU-1", 6, 2, 1).w("SKU-1", 5, 1, 1).rejW("SKU-1", 4, 0, 7)
	return b.es
}

func TestStats(t *testing.T) {
	r := CheckStats(context.Background(), Input{History: lockHistory(), ApplyLog: lockLog()})
	if r.Valid != Valid {
		t.Fatalf("valid = %v", r.Valid)
	}
	d := r.Details.(StatsDetails)
	want := map[string]OpCounts{
		"acquire": {OK: 2, Fail: 1, Info: 1},
		"read":    {OK: 2},
		"write":   {OK: 1, Info: 1},
		"release": {OK: 1},
		"session": {OK: 1},
		"lost":    {OK: 1},
		"late":    {OK: 1},
		"pause":   {OK: 1},
		"resume":  {OK: 1},
	}
	if fmt.Sprint(d.Ops) != fmt.Sprint(want) {
		t.Errorf("ops = %v\nwant %v", d.Ops, want)
	}
	if d.LockWaitMS.Count != 2 || d.LockWaitMS.P50 != 2 || d.LockWaitMS.Max != 10 {
		t.Errorf("lock wait = %+v", d.LockWaitMS)
	}
	if d.HoldMS.Count != 1 || d.HoldMS.Max != 10 {
		t.Errorf("hold = %+v", d.HoldMS)
	}
	if d.Sessions["disconnected"] != 1 || d.Lost != 1 || d.LostByState["expired"] != 1 || d.Late != 1 || d.LateByOp["write"] != 1 {
		t.Errorf("sessions %v lost %d %v late %d %v", d.Sessions, d.Lost, d.LostByState, d.Late, d.LateByOp)
	}
	if d.Nemesis["pause"].OK != 1 || d.Nemesis["resume"].OK != 1 || d.NemesisUnverified != 1 {
		t.Errorf("nemesis = %v unverified %d", d.Nemesis, d.NemesisUnverified)
	}
	if d.Timeouts != 2 || d.UnmatchedCompletions != 0 || d.Processes != 3 {
		t.Errorf("timeouts %d unmatched %d processes %d", d.Timeouts, d.UnmatchedCompletions, d.Processes)
	}
	if d.DurationS != 0.026 || d.AcquiresPerS != 2/0.026 {
		t.Errorf("duration %v acquires/s %v", d.DurationS, d.AcquiresPerS)
	}
	if d.Register.TokenRejections != 1 || d.Register.AcceptedWrites != 2 || d.TokenRejections != 1 {
		t.Errorf("register = %+v", d.Register)
	}
	if d.LatencyMS["write"].Count != 1 || d.LatencyMS["write"].Max != 1 {
		t.Errorf("write latency = %+v", d.LatencyMS["write"])
	}
}

func TestPercentiles(t *testing.T) {
	var xs []int64
	for i := int64(100); i >= 1; i-- {
		xs = append(xs, i*1e6)
	}
	p := percentiles(xs)
	if p.Count != 100 || p.P50 != 50 || p.P95 != 95 || p.P99 != 99 || p.Max != 100 {
		t.Errorf("percentiles = %+v", p)
	}
	if (percentiles(nil) != Percentiles{}) {
		t.Error("empty percentiles")
	}
}

func TestResultsJSONShape(t *testing.T) {
	res := RunAll(context.Background(), Input{History: lockHistory(), ApplyLog: lockLog()}, nil)
	if res.Valid != Invalid {
		t.Fatalf("verdict = %v, reasons %v", res.Valid, res.Reasons)
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := WriteResults(path, res); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["valid"] != false {
		t.Errorf("valid = %#v", m["valid"])
	}
	if g, _ := m["gate"].([]any); len(g) != 2 || g[0] != NameDoubleWriter || g[1] != NameRegister {
		t.Errorf("gate = %#v", m["gate"])
	}
	cs, _ := m["checkers"].(map[string]any)
	dw, _ := cs[NameDoubleWriter].(map[string]any)
	if dw["valid"] != false || dw["gating"] != true {
		t.Errorf("double-writer = %v", dw)
	}
	vs, _ := dw["violations"].([]any)
	if len(vs) == 0 {
		t.Fatalf("violations = %#v", dw["violations"])
	}
	for _, x := range vs {
		v := x.(map[string]any)
		for _, k := range []string{"kind", "key", "tokens", "processes", "seqs", "values", "message", "entries"} {
			if _, ok := v[k]; !ok {
				t.Errorf("violation lacks %q: %v", k, v)
			}
		}
	}
	if dw["first_violation_seq"] != float64(4) {
		t.Errorf("first_violation_seq = %v", dw["first_violation_seq"])
	}
	st, _ := cs[NameStats].(map[string]any)
	if st["valid"] != true {
		t.Errorf("stats valid = %v", st["valid"])
	}
	ops, _ := st["ops"].(map[string]any)
	for _, f := range []string{"acquire", "read", "write", "release", "session", "pause"} {
		o, _ := ops[f].(map[string]any)
		for _, k := range []string{"ok", "fail", "info"} {
			n, ok := o[k].(float64)
			if !ok || n != float64(int(n)) {
				t.Errorf("ops[%s][%s] = %#v", f, k, o[k])
			}
		}
	}

	back, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Valid != Invalid || back.Checkers[NameStats].Valid != Valid || !back.Checkers[NameDoubleWriter].Gating {
		t.Errorf("read back = %+v", back)
	}
	var d DoubleWriterDetails
	if err := back.Checkers[NameDoubleWriter].DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	if len(d.Violations) != len(vs) || d.FirstViolationSeq != 4 {
		t.Errorf("decoded details = %+v", d)
	}
	// Read back and written again, the file is the same.
	b2, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	var m2 map[string]any
	if err := json.Unmarshal(b2, &m2); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m2["checkers"]) != fmt.Sprint(m["checkers"]) {
		t.Error("results changed through ReadResults")
	}
}

func TestResultDetailsClash(t *testing.T) {
	if _, err := json.Marshal(Result{Details: map[string]int{"valid": 1}}); err == nil {
		t.Error("a details field named valid was accepted")
	}
	b, err := json.Marshal(Result{Valid: Valid, Details: []int{1}})
	if err != nil || !strings.Contains(string(b), `"details":[1]`) {
		t.Errorf("non-object details: %s %v", b, err)
	}
}

// genLog is a clean log of n entries over 64 keys: each critical section
// reads, writes once or twice, and now and then a stale holder is rejected.
func genLog(n int) []register.Entry {
	type st struct {
		val, tok int64
	}
	keys := make([]string, 64)
	state := make([]st, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("SKU-%d", i)
	}
	log := make([]register.Entry, 0, n)
	add := func(op string, k int, tok int64, p int, v int64, ok bool) {
		log = append(log, register.Entry{Seq: int64(len(log) + 1), Op: op, Key: keys[k], Token: tok, HasToken: true,
			Value: v, Process: p, Accepted: ok, Mode: register.ModeOn})
	}
	for i := 0; len(log) < n; i++ {
		k := i % 64
		s := &state[k]
		s.tok++
		p := i % 17
		add(register.OpRead, k, s.tok, p, s.val, true)
		for w := 0; w < 1+i%2 && len(log) < n; w++ {
			s.val++
			add(register.OpWrite, k, s.tok, p, s.val, true)
		}
		if i%5 == 0 && len(log) < n {
			add(register.OpWrite, k, s.tok-1, p+1, s.val, false)
		}
	}
	return log[:n]
}

func TestGeneratedLogIsClean(t *testing.T) {
	r, d := runDW(t, Input{ApplyLog: genLog(10000)})
	if r.Valid != Valid {
		t.Fatalf("valid = %v: %v", r.Valid, d.Violations[:min(3, len(d.Violations))])
	}
}

func BenchmarkDoubleWriter(b *testing.B) {
	const n = 1_000_000
	in := Input{ApplyLog: genLog(n)}
	b.ResetTimer()
	for b.Loop() {
		if r := CheckDoubleWriter(context.Background(), in); r.Valid != Valid {
			b.Fatalf("valid = %v", r.Valid)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
