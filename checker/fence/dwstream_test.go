package fence

import (
	"cmp"
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/resource/register"
)

// randomLog is a small log of random reads, writes (tokened or not) and
// rejections over three keys: violations of every kind, and now and then
// a gap in Seq.
func randomLog(r *rand.Rand, n int) []register.Entry {
	b := &checktest.Log{}
	keys := []string{"A", "B", "C"}
	for range n {
		k, tok, p, v := keys[r.IntN(len(keys))], int64(r.IntN(6)), r.IntN(4), int64(r.IntN(8))
		switch r.IntN(6) {
		case 0:
			b.R(k, tok, p, v)
		case 1:
			b.RejW(k, tok, p, v)
		case 2:
			b.W(k, 0, p, v)
			b.Entries[len(b.Entries)-1].HasToken = false
		default:
			b.W(k, tok, p, v)
		}
	}
	if r.IntN(5) == 0 && len(b.Entries) > 3 {
		b.Entries = slices.Delete(b.Entries, 1, 2)
	}
	return b.Entries
}

// TestStreamIsTheBatch feeds random logs entry by entry: the stream's
// evidence is the batch checker's, and each violation comes back from the
// Add of the write that made it, in the batch's order.
func TestStreamIsTheBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	seen := map[string]int{}
	for i := range 2000 {
		log := randomLog(r, r.IntN(60))
		limit := 1 + r.IntN(5)
		s := NewStream(limit, register.ModeOff)
		var streamed []Violation
		for j := range log {
			got := s.Add(&log[j])
			for _, v := range got {
				if v.Seqs[len(v.Seqs)-1] != log[j].Seq {
					t.Fatalf("log %d: Add of seq %d returned a violation made at seq %v", i, log[j].Seq, v.Seqs)
				}
			}
			streamed = append(streamed, got...)
		}
		_, batch := runDW(t, checker.Input{ApplyLog: log, MaxViolations: limit})
		batch.Reason = ""
		if a, b := mustJSON(t, s.Result()), mustJSON(t, batch); a != b {
			t.Fatalf("log %d: stream and batch differ:\nstream %s\nbatch  %s", i, a, b)
		}
		if s.Violations() != len(streamed) {
			t.Fatalf("log %d: Violations() = %d, Add returned %d", i, s.Violations(), len(streamed))
		}
		if n := min(limit, len(streamed)); mustJSON(t, append([]Violation{}, streamed[:n]...)) != mustJSON(t, batch.Violations) {
			t.Fatalf("log %d: the violations Add returned are not the batch's", i)
		}
		for k, n := range batch.ViolationCounts {
			seen[k] += n
		}
	}
	for _, k := range []string{KindTokenRegression, KindInterleavedGrants, KindLostUpdate} {
		if seen[k] == 0 {
			t.Errorf("the random logs never made a %s: the test shows nothing about it", k)
		}
	}
}

// TestStreamReportsAtTheViolatingWrite: nothing before the write that
// makes the violation, exactly it at that write.
func TestStreamReportsAtTheViolatingWrite(t *testing.T) {
	// Grant (5, p1) writes, grant (6, p2) writes, a rejected stale write
	// and a read change nothing, then p1 writes again with token 5.
	b := (&checktest.Log{}).W("K", 5, 1, 1).W("K", 6, 2, 2).RejW("K", 5, 1, 3).R("K", 6, 2, 2).W("K", 5, 1, 3)
	s := NewStream(10, register.ModeOff)
	for i := range b.Entries[:4] {
		if v := s.Add(&b.Entries[i]); v != nil {
			t.Fatalf("entry seq %d: violations %+v before the violating write", b.Entries[i].Seq, v)
		}
	}
	if s.Violations() != 0 {
		t.Fatalf("Violations() = %d before the violating write", s.Violations())
	}
	v := s.Add(&b.Entries[4])
	var got []string
	for _, x := range v {
		got = append(got, x.Kind)
	}
	if want := []string{KindTokenRegression, KindInterleavedGrants}; !slices.Equal(got, want) {
		t.Fatalf("violations at seq 5 = %v, want %v", got, want)
	}
	if s.Violations() != 2 || s.Result().FirstViolationSeq != 5 {
		t.Errorf("Violations() = %d, first seq %d; want 2 and 5", s.Violations(), s.Result().FirstViolationSeq)
	}
}

// TestStreamResultIsASnapshot: a Result taken mid-stream does not change
// as more entries come.
func TestStreamResultIsASnapshot(t *testing.T) {
	b := (&checktest.Log{}).W("K", 5, 1, 1).W("K", 4, 2, 2).W("K", 3, 3, 3)
	s := NewStream(10, register.ModeOff)
	s.Add(&b.Entries[0])
	s.Add(&b.Entries[1])
	mid := s.Result()
	before := mustJSON(t, mid)
	s.Add(&b.Entries[2])
	if after := mustJSON(t, mid); after != before {
		t.Errorf("an earlier Result changed:\nbefore %s\nafter  %s", before, after)
	}
	if s.Result().ViolationCounts[KindTokenRegression] != 2 {
		t.Errorf("counts = %v", s.Result().ViolationCounts)
	}
}

// TestStreamOutOfOrderSeq: the stream judges in the order it is fed (the
// batch sorts first); a repeat or gap is a Seq problem.
func TestStreamOutOfOrderSeq(t *testing.T) {
	b := (&checktest.Log{}).W("K", 1, 1, 1).W("K", 1, 1, 2).W("K", 1, 1, 3)
	s := NewStream(10, register.ModeOff)
	for _, i := range []int{0, 2, 1} {
		s.Add(&b.Entries[i])
	}
	got := s.Result().SeqProblems
	if want := []string{"seq jumps from 1 to 3", "seq jumps from 3 to 2"}; !slices.Equal(got, want) {
		t.Errorf("seq problems = %q, want %q", got, want)
	}
	sorted := slices.SortedFunc(slices.Values(b.Entries), func(a, b register.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	if r := CheckDoubleWriter(context.Background(), checker.Input{ApplyLog: sorted}); r.Valid != checker.Valid {
		t.Errorf("sorted: %v %s", r.Valid, r.Error)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fencedLog is a random request stream decided by the register's own rule
// (register.Decide, register.ApplyEntry) in mode: stale holders, tokens
// reused by other processes, reads that raise the fence, as a fenced run's
// apply log has them.
func fencedLog(t *testing.T, r *rand.Rand, n int, mode string) []register.Entry {
	t.Helper()
	keys := []string{"A", "B"}
	st := map[string]register.KeyState{}
	var log []register.Entry
	for i := range n {
		k, tok, p := keys[r.IntN(len(keys))], int64(r.IntN(12)), r.IntN(4)
		s, ok := st[k]
		if !ok {
			s = register.KeyState{Token: register.NoToken, Fence: register.NoToken}
		}
		op := register.OpWrite
		if r.IntN(4) == 0 {
			op = register.OpRead
		}
		e := register.Entry{Seq: int64(i + 1), Op: op, Key: k, Token: tok, HasToken: true, Process: p, Mode: mode,
			Value: s.Value, PrevValue: s.Value, PrevToken: s.Token, PrevFence: s.Fence}
		if op == register.OpWrite {
			e.Value = s.Value + 1 + int64(r.IntN(2)) // sometimes a lost update
		}
		e.Accepted, e.Reason = register.Decide(mode, op, s, true, tok)
		next, err := register.ApplyEntry(s, e)
		if err != nil {
			t.Fatal(err)
		}
		st[k] = next
		log = append(log, e)
	}
	return log
}

// TestFencedStreamForgetsFencedOffGrants: in a fenced run the stream
// drops the grants the register has fenced off, and that changes nothing
// it reports for any log the register's own rule makes; the slots left
// are those at the highest token. Unfenced, every grant stays.
func TestFencedStreamForgetsFencedOffGrants(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	violations := 0
	for i := range 1500 {
		mode := []string{register.ModeOn, register.ModeStrict}[i%2]
		log := fencedLog(t, r, 1+r.IntN(200), mode)
		fenced, all := NewStream(5, mode), NewStream(5, register.ModeOff)
		for j := range log {
			a, b := fenced.Add(&log[j]), all.Add(&log[j])
			if mustJSON(t, a) != mustJSON(t, b) {
				t.Fatalf("log %d (%s) seq %d: fenced stream says %s, keeping every grant %s", i, mode, log[j].Seq, mustJSON(t, a), mustJSON(t, b))
			}
		}
		if a, b := mustJSON(t, fenced.Result()), mustJSON(t, all.Result()); a != b {
			t.Fatalf("log %d (%s): results differ:\nfenced %s\nall    %s", i, mode, a, b)
		}
		violations += fenced.Violations()
		for k, ks := range fenced.keys {
			for g := range ks.grants {
				if g.token < ks.maxTok.Token {
					t.Fatalf("log %d key %s: grant %+v below the highest token %d kept", i, k, g, ks.maxTok.Token)
				}
			}
			if n := len(all.keys[k].grants); n > 4 && len(ks.grants) >= n {
				t.Fatalf("log %d key %s: %d grants kept of %d", i, k, len(ks.grants), n)
			}
		}
	}
	if violations == 0 {
		t.Error("the fenced logs never made a violation (lost updates): the test compares nothing but silence")
	}
}

// TestFencedStreamStillSeesARegression: were the register to accept a
// fenced-off grant's write, the token regression is still reported.
func TestFencedStreamStillSeesARegression(t *testing.T) {
	b := (&checktest.Log{}).W("K", 5, 1, 1).W("K", 6, 2, 2).W("K", 5, 1, 3)
	s := NewStream(10, register.ModeOn)
	for i := range b.Entries {
		s.Add(&b.Entries[i])
	}
	if got := s.Result().ViolationCounts; got[KindTokenRegression] != 1 {
		t.Errorf("counts %v, want one token regression", got)
	}
}
