package linear

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// eagerCuts makes the segmenter cut wherever it may, so that small
// histories are cut too.
func eagerCuts(t testing.TB) {
	ops, span := minCutOps, minCutSpan
	minCutOps, minCutSpan = 0, 0
	t.Cleanup(func() { minCutOps, minCutSpan = ops, span })
}

// whole is the reference: porcupine on each key's whole history.
func whole(name string, in checker.Input) checker.Result {
	return checkBatch(context.Background(), in, name, false)
}

func details(t *testing.T, r checker.Result) LinearDetails {
	t.Helper()
	d, ok := r.Details.(*LinearDetails)
	if !ok {
		t.Fatalf("no details: %v %s", r.Valid, r.Error)
	}
	return *d
}

// mutate breaks one ok read, acquire or write of a correct history, so
// that many (not all) mutated histories are not linearizable.
func mutate(r *rand.Rand, es []history.Event) []history.Event {
	es = slices.Clone(es)
	var at []int
	for i, e := range es {
		if e.Type == history.OK && e.Value != nil && (e.F == history.FRead || e.F == history.FWrite || e.F == history.FAcquire || e.F == history.FRelease) {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return es
	}
	i := at[r.IntN(len(at))]
	v := *es[i].Value
	switch es[i].F {
	case history.FRead:
		if r.IntN(2) == 0 && v.Current != nil {
			v.Current = history.Int64(*v.Current - 1)
		} else {
			v.N = history.Int64(*v.N + 1)
		}
	case history.FWrite:
		v.Token = history.Int64(*v.Token - 3)
	case history.FAcquire, history.FRelease:
		// the op now answers for another process
		es[i].Process++
	}
	es[i].Value = &v
	return es
}

// TestSegmentedMatchesWhole: on random lock histories (correct ones,
// with info operations and stale writes, and mutated ones), the segmented
// check gives the whole check's verdict, for both models, and does cut.
func TestSegmentedMatchesWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 1))
	seen := map[string]int{}
	eagerCuts(t)
	for i := range 400 {
		if i == 200 {
			minCutOps, minCutSpan = 64, int64(time.Second) // the defaults
		}
		modes := []string{register.ModeOff, register.ModeOn, register.ModeStrict}
		spec := checktest.GenSpec{Seed: uint64(i), Events: 100 + r.IntN(1500), Keys: 1 + r.IntN(3), WorkersPerKey: 1 + r.IntN(4),
			InfoShare: r.Float64() * 0.1, StaleShare: r.Float64() * 0.1, Mode: modes[r.IntN(3)]}
		es, _ := checktest.GenLockHistory(spec)
		if i%2 == 1 {
			es = mutate(r, es)
		}
		in := checker.Input{History: es, Fencing: spec.Mode}
		for _, name := range []string{NameRegister, NameMutex} {
			check := CheckRegister
			if name == NameMutex {
				check = CheckMutex
			}
			seg, ref := check(context.Background(), in), whole(name, in)
			if seg.Valid != ref.Valid {
				t.Fatalf("case %d %s (%+v): segmented %v (%s), whole %v (%s)", i, name, spec, seg.Valid, seg.Error, ref.Valid, ref.Error)
			}
			d := details(t, seg)
			seen[name+" "+seg.Valid.String()]++
			if d.Segments > d.Partitions {
				seen[name+" cut"]++
			}
			if wd := details(t, ref); wd.Operations != d.Operations || wd.InfoOperations != d.InfoOperations {
				t.Fatalf("case %d %s: operations %d/%d info, whole %d/%d", i, name, d.Operations, d.InfoOperations, wd.Operations, wd.InfoOperations)
			}
		}
	}
	for _, want := range []string{"register true", "register false", "mutex true", "mutex false", "register cut", "mutex cut"} {
		if seen[want] == 0 {
			t.Errorf("no case of %q: %v", want, seen)
		}
	}
	t.Logf("%v", seen)
}

// randomRegister is a register without a lock, used by up to four
// processes at once: every operation takes effect at a random instant of
// its interval (or, for an info one, maybe never), so the history is
// linearizable, and then one read may be corrupted. Concurrent writes
// leave end states undetermined, which the segmenter must see.
func randomRegister(r *rand.Rand, n int) []history.Event {
	type pend struct {
		p      int
		write  bool
		v      int64
		effect bool
		info   bool
	}
	b := &checktest.Hist{}
	val, tok := int64(0), register.NoToken
	open := map[int]*pend{}
	var seq int64
	for len(b.Events) < n {
		p := r.IntN(4)
		o := open[p]
		if o == nil {
			o = &pend{p: p, write: r.IntN(2) == 0, info: r.IntN(10) == 0}
			if o.write {
				seq++
				o.v = seq
				b.WriteInv(p, "k", o.v)
			} else {
				b.Inv(p, history.FRead, "k")
			}
			open[p] = o
			continue
		}
		if !o.effect && (!o.info || r.IntN(2) == 0) {
			// takes effect now, between invocation and completion
			o.effect = true
			if o.write {
				val, tok = o.v, register.NoToken
			} else {
				o.v = val
			}
			if r.IntN(2) == 0 {
				continue
			}
		}
		delete(open, p)
		switch {
		case o.info:
			b.Info(p, map[bool]string{true: history.FWrite, false: history.FRead}[o.write], "k")
		case o.write:
			b.Ev(p, history.OK, history.FWrite, "k", &history.Value{N: history.Int64(o.v)}, "")
		default:
			v := &history.Value{N: history.Int64(o.v), Current: history.Int64(tok)}
			if r.IntN(30) == 0 {
				v.N = history.Int64(o.v + 1)
			}
			b.Ev(p, history.OK, history.FRead, "k", v, "")
		}
	}
	return b.Events
}

// TestSegmentedMatchesWholeConcurrent: the same on a register used
// concurrently, without a lock.
func TestSegmentedMatchesWholeConcurrent(t *testing.T) {
	eagerCuts(t)
	r := rand.New(rand.NewPCG(7, 7))
	seen := map[string]int{}
	for i := range 1500 {
		in := checker.Input{History: randomRegister(r, 10+r.IntN(80)), Fencing: register.ModeOff}
		seg, ref := CheckRegister(context.Background(), in), whole(NameRegister, in)
		if seg.Valid != ref.Valid {
			t.Fatalf("case %d: segmented %v (%s), whole %v (%s)\n%v", i, seg.Valid, seg.Error, ref.Valid, ref.Error, in.History)
		}
		seen[seg.Valid.String()]++
		if d := details(t, seg); d.Segments > 1 {
			seen["cut"]++
		}
	}
	if seen["true"] == 0 || seen["false"] == 0 || seen["cut"] == 0 {
		t.Fatalf("cases %v", seen)
	}
	t.Logf("%v", seen)
}

// TestCutRules: where a key is cut and where not.
func TestCutRules(t *testing.T) {
	eagerCuts(t)
	seg := func(b *checktest.Hist) PartitionResult {
		t.Helper()
		r := CheckRegister(context.Background(), checker.Input{History: b.Events, Fencing: register.ModeOff})
		return details(t, r).Keys["k"]
	}
	// Sequential grants: a cut between every two.
	b := &checktest.Hist{}
	b.Section(0, "k", 10, 0, -1).Section(1, "k", 11, 1, 10).Section(2, "k", 12, 2, 11)
	if k := seg(b); k.Segments != 6 || k.LargestSegment != 1 || k.Valid != checker.Valid || k.Uncut != "" {
		t.Errorf("sequential: %+v", k)
	}
	// Two overlapping writes: which was last is not known until a read
	// says it, so no cut between them and the read.
	b = &checktest.Hist{}
	b.WriteInv(0, "k", 1).WriteInv(1, "k", 2)
	b.Ev(0, history.OK, history.FWrite, "k", &history.Value{N: history.Int64(1)}, "")
	b.Ev(1, history.OK, history.FWrite, "k", &history.Value{N: history.Int64(2)}, "")
	b.Inv(2, history.FRead, "k").Ev(2, history.OK, history.FRead, "k", &history.Value{N: history.Int64(1), Current: history.Int64(-1)}, "")
	b.Inv(2, history.FRead, "k").Ev(2, history.OK, history.FRead, "k", &history.Value{N: history.Int64(1), Current: history.Int64(-1)}, "")
	if k := seg(b); k.Segments != 2 || k.LargestSegment != 3 || k.Valid != checker.Valid {
		t.Errorf("overlapping writes: %+v", k)
	}
	// An info write keeps the key open to the end: one segment, named.
	b = &checktest.Hist{}
	b.WriteInv(0, "k", 1).Info(0, history.FWrite, "k").Section(1, "k", 11, 1, -1)
	k := seg(b)
	if k.Segments != 1 || !strings.HasPrefix(k.Uncut, "one segment") || k.Valid != checker.Valid {
		t.Errorf("info write: %+v", k)
	}
	r := CheckRegister(context.Background(), checker.Input{History: b.Events, Fencing: register.ModeOff})
	if d := details(t, r); !slices.Equal(d.UncutKeys, []string{"k"}) {
		t.Errorf("uncut keys %v", d.UncutKeys)
	}
}

// TestTimesBackwards: a history whose times go back across a cut cannot
// be segmented, so the key is unknown rather than judged.
func TestTimesBackwards(t *testing.T) {
	eagerCuts(t)
	b := &checktest.Hist{}
	b.Section(0, "k", 10, 0, -1).Section(1, "k", 11, 1, 10)
	b.Events[10].Time, b.Events[11].Time = 35, 36 // p1's read, before p0's write returned
	r := CheckRegister(context.Background(), checker.Input{History: b.Events, Fencing: register.ModeOff})
	if r.Valid != checker.Unknown || !strings.Contains(r.Error, "undecided") {
		t.Fatalf("%v %s", r.Valid, r.Error)
	}
	if k := details(t, r).Keys["k"]; !strings.Contains(k.Error, "backwards") {
		t.Fatalf("key %+v", k)
	}
}

// exitIndex is, per retired process of a generated history, the index of
// the event after which its worker may be said to have exited: its info
// completion, or its late answer when one came.
func exitIndex(es []history.Event) map[int]history.Process {
	at := map[history.Process]int{}
	for i, e := range es {
		if e.Type == history.Info || (e.F == history.FLate && e.Type == history.OK) {
			at[e.Process] = i
		}
	}
	out := map[int]history.Process{}
	for p, i := range at {
		out[i] = p
	}
	return out
}

// TestResolvedNarrows: fed the apply log and the exits, the stream
// resolves info reads and writes, cuts keys the history alone keeps open,
// and keeps the whole check's verdict on generated runs (correct ones
// stay true, stale writes without fencing stay false).
func TestResolvedNarrows(t *testing.T) {
	eagerCuts(t)
	seen := map[string]int{}
	for i := range 150 {
		modes := []string{register.ModeOff, register.ModeOn, register.ModeStrict}
		spec := checktest.GenSpec{Seed: uint64(i), Events: 2000, Keys: 2, WorkersPerKey: 1 + i%3,
			InfoShare: 0.05, StaleShare: 0.03 * float64(i%2), Mode: modes[i%3]}
		es, log := checktest.GenLockHistory(spec)
		s, err := NewStream(context.Background(), StreamConfig{Checker: NameRegister, Fencing: spec.Mode})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range log {
			s.Applied(e)
		}
		exits := exitIndex(es)
		var found []Violation
		for j, e := range es {
			found = append(found, s.Add(e)...)
			if p, ok := exits[j]; ok {
				found = append(found, s.Exited(p, e.Time)...)
			}
		}
		res := s.Result()
		ref := whole(NameRegister, checker.Input{History: es, Fencing: spec.Mode})
		if res.Valid != ref.Valid {
			t.Fatalf("case %d (%+v): resolved %v (%s), whole %v (%s)", i, spec, res.Valid, res.Error, ref.Valid, ref.Error)
		}
		if (res.Valid == checker.Invalid) != (len(found) > 0) {
			t.Fatalf("case %d: verdict %v but %d violations streamed", i, res.Valid, len(found))
		}
		d, wd := details(t, res), details(t, ref)
		seen[res.Valid.String()]++
		if d.Unresolved > 0 {
			t.Fatalf("case %d: %d unresolved", i, d.Unresolved)
		}
		if wd.InfoOperations > 0 && d.InfoOperations < wd.InfoOperations {
			seen["resolved"]++
		}
		if len(d.UncutKeys) < len(wd.UncutKeys) || len(wd.UncutKeys) > 0 && len(d.UncutKeys) == 0 {
			seen["cut where the history alone could not"]++
		}
	}
	for _, want := range []string{"true", "false", "resolved", "cut where the history alone could not"} {
		if seen[want] == 0 {
			t.Errorf("no case of %q: %v", want, seen)
		}
	}
	t.Logf("%v", seen)
}

// TestStreamGivesUp: a key that is never cut is given up at the bound,
// unknown, and named.
func TestStreamGivesUp(t *testing.T) {
	eagerCuts(t)
	s, err := NewStream(context.Background(), StreamConfig{Checker: NameRegister, Fencing: register.ModeOff, MaxSegmentOps: 10})
	if err != nil {
		t.Fatal(err)
	}
	b := &checktest.Hist{}
	b.WriteInv(0, "k", 1).Info(0, history.FWrite, "k")
	for i := range 20 {
		b.Section(i+1, "k", int64(11+i), 0, -1)
	}
	for _, e := range b.Events {
		s.Add(e)
	}
	r := s.Result()
	d := details(t, r)
	k := d.Keys["k"]
	if r.Valid != checker.Unknown || !strings.Contains(k.Uncut, "given up") || !slices.Equal(d.UncutKeys, []string{"k"}) {
		t.Fatalf("%v %s: %+v", r.Valid, r.Error, k)
	}
	if _, err := NewStream(context.Background(), StreamConfig{Checker: "bogus"}); err == nil {
		t.Fatal("a bogus checker name was accepted")
	}
}

// TestStreamReportsIdleKey: with the default cut thresholds, a violation
// on a key that then goes quiet is reported once a second has passed on
// the run clock (other keys' events), not at the end.
func TestStreamReportsIdleKey(t *testing.T) {
	s, err := NewStream(context.Background(), StreamConfig{Checker: NameRegister, Fencing: register.ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	b := &checktest.Hist{}
	b.Section(0, "k", 10, 0, -1).Acquire(1, "k", 11).Read(1, "k", 11, 5, -1) // 5 was never written
	b.Release(1, "k")
	var at []int64
	for i := range 30 {
		b.T += int64(100 * time.Millisecond)
		b.Section(2+i, "j", int64(20+i), int64(i), -1)
	}
	for _, e := range b.Events {
		for _, v := range s.Add(e) {
			if v.Key != "k" {
				t.Fatalf("violation on %s", v)
			}
			at = append(at, e.Time)
		}
	}
	if len(at) != 1 || at[0] > int64(1500*time.Millisecond) {
		t.Fatalf("violation reported at %v", at)
	}
	if r := s.Result(); r.Valid != checker.Invalid {
		t.Fatalf("%v %s", r.Valid, r.Error)
	}
}
