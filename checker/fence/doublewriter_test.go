package fence

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/resource/register"
)

func runDW(t *testing.T, in checker.Input) (checker.Result, DoubleWriterDetails) {
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
	b := &checktest.Log{}
	// Two keys, grants hand over cleanly; grant 1 writes three times (a
	// holder may write several times under one grant); stale holders are
	// rejected, and their rejected entries carry wrong values and lower
	// tokens, which must not count.
	b.R("SKU-1", 1, 0, 0).W("SKU-1", 1, 0, 1).W("SKU-1", 1, 0, 2).W("SKU-1", 1, 0, 3)
	b.R("SKU-2", 1, 1, 0).W("SKU-2", 1, 1, 1)
	b.R("SKU-1", 2, 1, 3).W("SKU-1", 2, 1, 4)
	b.RejW("SKU-1", 1, 0, 3).RejR("SKU-1", 1, 0, 4).RejW("SKU-1", 1, 0, 99)
	b.R("SKU-1", 3, 2, 4).W("SKU-1", 3, 2, 5)
	b.RejW("SKU-2", 0, 5, 1)
	b.W("SKU-2", 4, 3, 2)
	r, d := runDW(t, checker.Input{ApplyLog: b.Entries})
	if r.Valid != checker.Valid || len(d.Violations) != 0 {
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
		build func(b *checktest.Log)
		kind  string
		seqs  []int64
	}{
		{"token-regression", func(b *checktest.Log) {
			b.W("K", 6, 1, 1).W("K", 5, 2, 2)
		}, KindTokenRegression, []int64{1, 2}},
		{"interleaved-grants", func(b *checktest.Log) {
			// The same token handed to two processes (a buggy recipe):
			// tokens never go down and the counter is intact, yet the
			// first holder writes after the second.
			b.W("K", 5, 1, 1).W("K", 5, 2, 2).W("K", 5, 1, 3)
		}, KindInterleavedGrants, []int64{1, 2, 3}},
		{"lost-update", func(b *checktest.Log) {
			b.W("K", 5, 1, 1).W("K", 6, 2, 1)
		}, KindLostUpdate, []int64{1, 2}},
		{"lost-update-first-write", func(b *checktest.Log) {
			b.W("K", 5, 1, 3)
		}, KindLostUpdate, []int64{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &checktest.Log{}
			c.build(b)
			// Rejected noise around the violation changes nothing.
			b.RejW("K", 0, 9, 42).RejR("K", 0, 9, 0)
			r, d := runDW(t, checker.Input{ApplyLog: b.Entries})
			if r.Valid != checker.Invalid {
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
			// The reason is in results.json's error and on stdout.
			if want := "1 violation in the apply log (1 " + c.kind + "), first: " + v.Message; r.Error != want {
				t.Errorf("error = %q, want %q", r.Error, want)
			}
			if d.FirstViolationSeq != c.seqs[len(c.seqs)-1] {
				t.Errorf("first violation seq = %d, want %d", d.FirstViolationSeq, c.seqs[len(c.seqs)-1])
			}
		})
	}
}

func TestLostUpdateEvidence(t *testing.T) {
	b := (&checktest.Log{}).W("K", 5, 1, 1).W("K", 6, 2, 1)
	_, d := runDW(t, checker.Input{ApplyLog: b.Entries})
	v := d.Violations[0]
	if *v.Expected != 2 || *v.Actual != 1 || fmt.Sprint(v.Processes) != "[1 2]" || fmt.Sprint(v.Tokens) != "[5 6]" {
		t.Errorf("violation = %+v", v)
	}
}

func TestInterleavedReportsBothGrants(t *testing.T) {
	// Fencing off: the stale holder's write is a regression and an
	// interleaving, and the counter also breaks.
	b := (&checktest.Log{}).W("K", 5, 1, 1).W("K", 6, 2, 2).W("K", 5, 1, 2)
	_, d := runDW(t, checker.Input{ApplyLog: b.Entries})
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
	b := (&checktest.Log{}).W("K", 5, 1, 1).W("K", 5, 1, 2).W("K", 5, 2, 3).W("K", 5, 3, 4).W("K", 5, 2, 5)
	_, d := runDW(t, checker.Input{ApplyLog: b.Entries})
	if got := kinds(d); len(got) != 1 || got[0] != KindInterleavedGrants || fmt.Sprint(d.Violations[0].Seqs) != "[3 4 5]" {
		t.Fatalf("violations = %+v", d.Violations)
	}
}

func TestDoubleWriterUnsortedLog(t *testing.T) {
	b := (&checktest.Log{}).W("K", 1, 1, 1).W("K", 2, 2, 2).W("K", 3, 3, 3)
	b.Entries[0], b.Entries[2] = b.Entries[2], b.Entries[0]
	r, _ := runDW(t, checker.Input{ApplyLog: b.Entries})
	if r.Valid != checker.Valid {
		t.Fatalf("valid = %v (%s)", r.Valid, r.Error)
	}
	if b.Entries[0].Seq != 3 {
		t.Error("the caller's log was reordered")
	}
}

func TestDoubleWriterUnknown(t *testing.T) {
	hist := checktest.OkWrite(0, "K", 1, 1, 100)
	r, d := runDW(t, checker.Input{History: hist})
	if r.Valid != checker.Unknown || d.Reason == "" || !strings.Contains(r.Error, "empty") {
		t.Fatalf("empty log with ok writes: valid=%v reason=%q", r.Valid, d.Reason)
	}
	// A run that wrote nothing proves nothing: it must not pass a gate.
	if r, _ := runDW(t, checker.Input{}); r.Valid != checker.Unknown || !strings.Contains(r.Error, "exercised nothing") {
		t.Errorf("nothing at all: valid=%v (%s), want unknown", r.Valid, r.Error)
	}
	// The log has fewer accepted writes than the workers saw succeed.
	hist = append(hist, checktest.OkWrite(1, "K", 2, 2, 200)...)
	b := (&checktest.Log{}).W("K", 1, 0, 1)
	if r, _ := runDW(t, checker.Input{History: hist, ApplyLog: b.Entries}); r.Valid != checker.Unknown {
		t.Errorf("incomplete log: valid=%v, want unknown", r.Valid)
	}
	// A gap in Seq.
	b = (&checktest.Log{}).W("K", 1, 0, 1).R("K", 2, 1, 1).W("K", 2, 1, 2)
	b.Entries = append(b.Entries[:1], b.Entries[2:]...)
	r, d = runDW(t, checker.Input{ApplyLog: b.Entries})
	if r.Valid != checker.Unknown || len(d.SeqProblems) == 0 {
		t.Errorf("gap: valid=%v problems=%v", r.Valid, d.SeqProblems)
	}
	// Evidence of a violation stands even on a damaged log.
	b = (&checktest.Log{}).W("K", 1, 0, 1).W("K", 2, 1, 1)
	if r, _ := runDW(t, checker.Input{History: append(hist, checktest.OkWrite(3, "K", 3, 3, 300)...), ApplyLog: b.Entries}); r.Valid != checker.Invalid {
		t.Errorf("violation on incomplete log: valid=%v, want false", r.Valid)
	}
}

func TestFirstViolationTimes(t *testing.T) {
	b := (&checktest.Log{}).W("K", 5, 1, 1).W("K", 6, 2, 1)
	hist := append(checktest.OkWrite(1, "K", 5, 1, 100), checktest.OkWrite(2, "K", 6, 1, 250)...)
	start := b.Entries[0].Wall - 40
	_, d := runDW(t, checker.Input{History: hist, ApplyLog: b.Entries, StartWall: start})
	if d.FirstViolationSeq != 2 {
		t.Fatalf("first seq = %d", d.FirstViolationSeq)
	}
	if d.FirstViolationAfterNS == nil || *d.FirstViolationAfterNS != b.Entries[1].Wall-start {
		t.Errorf("after ns = %v", d.FirstViolationAfterNS)
	}
	if d.FirstViolationTimeNS == nil || *d.FirstViolationTimeNS != 250 {
		t.Errorf("history time = %v", d.FirstViolationTimeNS)
	}
	_, d = runDW(t, checker.Input{ApplyLog: b.Entries})
	if d.FirstViolationAfterNS != nil {
		t.Errorf("after ns without StartWall = %v", *d.FirstViolationAfterNS)
	}
}

func TestMaxViolations(t *testing.T) {
	b := &checktest.Log{}
	for i := 0; i < 10; i++ {
		b.W("K", int64(i), i, 1)
	}
	_, d := runDW(t, checker.Input{ApplyLog: b.Entries, MaxViolations: 3})
	if len(d.Violations) != 3 || d.ViolationsOmitted != 6 || d.ViolationCounts[KindLostUpdate] != 9 {
		t.Errorf("kept %d omitted %d counts %v", len(d.Violations), d.ViolationsOmitted, d.ViolationCounts)
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
	r, d := runDW(t, checker.Input{ApplyLog: genLog(10000)})
	if r.Valid != checker.Valid {
		t.Fatalf("valid = %v: %v", r.Valid, d.Violations[:min(3, len(d.Violations))])
	}
}

func BenchmarkDoubleWriter(b *testing.B) {
	const n = 1_000_000
	in := checker.Input{ApplyLog: genLog(n)}
	b.ResetTimer()
	for b.Loop() {
		if r := CheckDoubleWriter(context.Background(), in); r.Valid != checker.Valid {
			b.Fatalf("valid = %v", r.Valid)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
