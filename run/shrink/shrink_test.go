package shrink

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/nemesis"
)

// entry is a schedule entry of fault at offset with hold, in seconds.
func entry(fault string, offset, hold float64) nemesis.Entry {
	sec := func(f float64) nemesis.Duration { return nemesis.Duration(time.Duration(f * float64(time.Second))) }
	return nemesis.Entry{Fault: fault, Offset: sec(offset), Hold: sec(hold)}
}

// eight is an original of eight entries, one every 5 s, each held 2 s;
// entry i pauses "f<i>".
func eight() Scenario {
	var es []nemesis.Entry
	for i := range 8 {
		es = append(es, entry("f"+string(rune('0'+i)), float64(5*i+1), 2))
	}
	return Scenario{Entries: es, TimeLimit: 60 * time.Second, Workers: 6, Keys: 3}
}

// fake is a judge that reproduces when its rule holds, counting calls.
type fake struct {
	rule  func(Scenario) bool
	calls int
}

func (f *fake) judge(_ context.Context, s Scenario) (Verdict, error) {
	f.calls++
	ok := f.rule(s)
	v := Verdict{OK: ok, Replays: 1}
	if ok {
		v.Reproduced, v.ToFirst = 1, 20*time.Second
	}
	return v, nil
}

func faults(s Scenario) []string {
	var out []string
	for _, e := range s.Entries {
		out = append(out, e.Fault)
	}
	return out
}

func has(s Scenario, fault string, minHold time.Duration) bool {
	for _, e := range s.Entries {
		if e.Fault == fault && time.Duration(e.Hold) >= minHold {
			return true
		}
	}
	return false
}

// TestShrinkEntries: the entries a violation needs are found among
// eight, one or two of them, in few judgements; one that needs no fault
// shrinks to the empty schedule at the first.
func TestShrinkEntries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		need     []string
		maxCalls int
	}{
		{"the last", []string{"f7"}, 5},
		{"the first", []string{"f0"}, 12},
		{"two apart", []string{"f2", "f5"}, 20},
		{"none", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{rule: func(s Scenario) bool {
				for _, n := range tc.need {
					if !has(s, n, 0) {
						return false
					}
				}
				return true
			}}
			var calls int
			ctx := context.Background()
			s := &state{judge: f.judge, best: eight(), seen: map[string]bool{}}
			s.entries(ctx)
			calls = f.calls
			if got := faults(s.best); !slices.Equal(got, tc.need) {
				t.Errorf("entries %v, want %v", got, tc.need)
			}
			if calls > tc.maxCalls {
				t.Errorf("%d judgements, want at most %d", calls, tc.maxCalls)
			}
			if len(s.steps) != calls || (tc.need == nil && s.steps[0].Tried != "no entry") {
				t.Errorf("steps %+v", s.steps)
			}
		})
	}
}

// TestShrinkBeforeFirstViolation: entries after the original's first
// violation are tried away at once, the time limit cut past it.
func TestShrinkBeforeFirstViolation(t *testing.T) {
	f := &fake{rule: func(s Scenario) bool { return has(s, "f1", 0) }}
	s := &state{judge: f.judge, best: eight(), toFirst: 9 * time.Second, seen: map[string]bool{}}
	s.entries(context.Background())
	first := s.steps[0]
	if got := faults(s.best); !slices.Equal(got, []string{"f1"}) || first.Tried != "the 2 entries before the first violation, time limit 12s" ||
		!first.Kept || first.TimeLimit != 12*time.Second || s.best.TimeLimit != 12*time.Second {
		t.Errorf("entries %v, time limit %s after steps %+v; want f1, the limit cut to 12s (f1 ends at 9s, a quarter and a second more)", got, s.best.TimeLimit, s.steps)
	}
}

// TestShrinkAll: every step in turn: the one entry needed, its hold and
// the gap before it halved while it reproduces, the time limit cut past
// the entry and the detection, workers and keys to their floors.
func TestShrinkAll(t *testing.T) {
	f := &fake{rule: func(s Scenario) bool {
		return has(s, "f3", 1500*time.Millisecond) && s.TimeLimit >= 20*time.Second && s.Workers >= 3
	}}
	res := Shrink(context.Background(), eight(), 25*time.Second, f.judge, nil)
	b := res.Best
	if len(b.Entries) != 1 || b.Entries[0].Fault != "f3" {
		t.Fatalf("entries %v, want f3 alone", faults(b))
	}
	e := b.Entries[0]
	if time.Duration(e.Hold) != 2*time.Second || time.Duration(e.Offset) >= 4*time.Second {
		t.Errorf("hold %s offset %s; want the hold kept (1 s does not reproduce), the offset (16 s) halved down", time.Duration(e.Hold), time.Duration(e.Offset))
	}
	if b.TimeLimit != 26*time.Second || b.Workers != 3 || b.Keys != 1 {
		t.Errorf("time limit %s, workers %d, keys %d; want 26s (20s detection, a quarter and a second), 3, 1", b.TimeLimit, b.Workers, b.Keys)
	}
	if res.Verdict == nil || !res.Verdict.OK {
		t.Errorf("verdict %+v; want the best's", res.Verdict)
	}
	steps := map[string]bool{}
	for _, st := range res.Steps {
		steps[st.Step] = true
	}
	for _, want := range []string{"entries", "holds", "gaps", "time-limit", "workers", "keys"} {
		if !steps[want] {
			t.Errorf("no %s step in %+v", want, res.Steps)
		}
	}
}

// TestShrinkNothingSmaller: when nothing smaller reproduces, the
// original is measured last and is the minimal scenario if it does.
func TestShrinkNothingSmaller(t *testing.T) {
	orig := Scenario{Entries: []nemesis.Entry{entry("a", 1, 2)}, TimeLimit: 10 * time.Second, Workers: 2}
	f := &fake{rule: func(s Scenario) bool { return s.key() == orig.key() }}
	res := Shrink(context.Background(), orig, 0, f.judge, nil)
	last := res.Steps[len(res.Steps)-1]
	if res.Verdict == nil || last.Step != "original" || !last.Kept || res.Best.key() != orig.key() {
		t.Errorf("verdict %+v, steps %+v; want the original measured last and kept", res.Verdict, res.Steps)
	}
	f.rule = func(Scenario) bool { return false }
	if res := Shrink(context.Background(), orig, 0, f.judge, nil); res.Verdict != nil {
		t.Errorf("nothing reproduces, yet verdict %+v", res.Verdict)
	}
}

// TestShrinkBudget: at the budget (ctx ended) the search stops and
// keeps the best so far; the candidate interrupted is not kept.
func TestShrinkBudget(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fake{}
	f.rule = func(s Scenario) bool {
		if f.calls == 3 {
			cancel()
		}
		return has(s, "f7", 0)
	}
	res := Shrink(ctx, eight(), 0, f.judge, nil)
	if f.calls != 3 || len(res.Steps) != 3 || res.Steps[2].Kept || res.Steps[2].Detail != "interrupted at the budget" {
		t.Fatalf("%d calls, steps %+v; want 3, the third interrupted", f.calls, res.Steps)
	}
	if got := faults(res.Best); len(got) != 4 || res.Verdict == nil {
		t.Errorf("best %v, verdict %+v; want the half kept at the second step", got, res.Verdict)
	}
}

func TestDdmin(t *testing.T) {
	items := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, need := range [][]int{{3}, {0, 10}, {2, 3, 4}, {1, 5, 9}} {
		tested := 0
		got := ddmin(context.Background(), items, func(sub []int) bool {
			tested++
			for _, n := range need {
				if !slices.Contains(sub, n) {
					return false
				}
			}
			return true
		})
		if !slices.Equal(got, need) || tested > 60 {
			t.Errorf("need %v: got %v after %d tests", need, got, tested)
		}
	}
}

func TestCutGaps(t *testing.T) {
	es := []nemesis.Entry{entry("a", 4, 2), entry("b", 10, 1), entry("c", 11.05, 1)}
	if got := cutGaps(es, 0); time.Duration(got[2].Offset) != 3250*time.Millisecond {
		t.Errorf("gaps cut to the floor: %+v; want c at 0.1+2+0.1+1+0.05 = 3.25s", got)
	}
	got := cutGaps(es, 2)
	want := []float64{2, 6, 7.05} // gaps 4, 4, 0.05 → 2, 2, 0.05 (below the floor, kept)
	for i, e := range got {
		if w := time.Duration(want[i] * float64(time.Second)); time.Duration(e.Offset) != w || e.Hold != es[i].Hold {
			t.Errorf("entry %d: offset %s hold %s; want %s, the hold kept", i, time.Duration(e.Offset), time.Duration(e.Hold), w)
		}
	}
	if time.Duration(es[0].Offset) != 4*time.Second {
		t.Error("cutGaps changed its input")
	}
}

func TestParseRate(t *testing.T) {
	if r, err := ParseRate("2/3"); err != nil || r != (Rate{2, 3}) || r.String() != "2/3" {
		t.Errorf("2/3: %v, %v", r, err)
	}
	for _, bad := range []string{"", "2", "0/3", "4/3", "1/11", "a/b", "2/3/4"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
