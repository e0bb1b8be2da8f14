package fence

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// randomTokenHistory is a lock history by dice with reads and writes the
// register rejects: processes holding keys with tokens right or wrong,
// grants that overlap, open and failed operations, lost and session
// events, session-gone observations and pauses; sometimes shuffled, so
// times need not grow with the index; sometimes 30 of them end to end.
func randomTokenHistory(rng *rand.Rand) []history.Event {
	var evs []history.Event
	add := func(t int64, p history.Process, typ history.Type, f, key string, v *history.Value) {
		evs = append(evs, history.Event{Time: t * 1e6, Process: p, Type: typ, F: f, Key: key, Value: v})
	}
	sessions := []string{"0x1a", "1A", "0x2b", ""}
	keys := []string{"K", "L", "M"}[:1+rng.IntN(3)]
	rounds := 1 + rng.IntN(2)*29
	var offset int64
	for range rounds {
		var end int64
		tok := int64(0)
		for p := range 2 + rng.IntN(4) {
			proc := history.Process(p)
			t := offset + int64(rng.IntN(20))
			for range 5 + rng.IntN(25) {
				key := keys[rng.IntN(len(keys))]
				d := int64(1 + rng.IntN(15))
				switch r := rng.IntN(14); {
				case r < 4:
					tok++
					add(t, proc, history.Invoke, history.FAcquire, key, nil)
					if typ := []history.Type{history.OK, history.OK, history.Fail, ""}[rng.IntN(4)]; typ != "" {
						add(t+d, proc, typ, history.FAcquire, key, &history.Value{Token: history.Int64(tok)})
					}
				case r < 6:
					add(t, proc, history.Invoke, history.FRelease, key, nil)
					add(t+d, proc, history.OK, history.FRelease, key, nil)
				case r < 10:
					f := []string{history.FRead, history.FWrite}[rng.IntN(2)]
					add(t, proc, history.Invoke, f, key, &history.Value{Token: history.Int64(tok)})
					v := &history.Value{Token: history.Int64(tok - int64(rng.IntN(3)))}
					typ := []history.Type{history.OK, history.Fail, history.Fail, history.Fail, history.Info, ""}[rng.IntN(6)]
					if typ == history.Fail && rng.IntN(4) > 0 {
						v.Current = history.Int64(tok + int64(rng.IntN(2)))
					}
					if typ != "" {
						add(t+d, proc, typ, f, key, v)
					}
				case r < 11:
					st := []string{"connected", "expired", "closed"}[rng.IntN(3)]
					add(t, proc, history.OK, history.FSession, "", &history.Value{Session: sessions[rng.IntN(len(sessions))], State: st})
				case r < 12:
					var v *history.Value
					if rng.IntN(3) > 0 {
						v = &history.Value{State: []string{"expired", "released", "session-changed"}[rng.IntN(3)], Session: sessions[rng.IntN(len(sessions))]}
					}
					add(t, proc, history.OK, history.FLost, key, v)
				case r < 13:
					add(t+int64(rng.IntN(40)), history.Nemesis, history.OK, history.FSessionGone, "",
						&history.Value{Session: sessions[rng.IntN(len(sessions))], TargetProcess: history.Int(p), LastSeenNS: history.Int64((t - int64(rng.IntN(30))) * 1e6)})
				default:
					add(t, history.Nemesis, history.Invoke, history.FPause, "", &history.Value{Target: fmt.Sprintf("process %d", p)})
					add(t+1, history.Nemesis, history.OK, history.FPause, "", &history.Value{Target: fmt.Sprintf("process %d", p)})
					add(t+d, history.Nemesis, history.Invoke, history.FResume, "", nil)
					add(t+d+1, history.Nemesis, history.OK, history.FResume, "", nil)
				}
				t += d + int64(rng.IntN(10))
				end = max(end, t)
			}
		}
		offset = end + 50
	}
	slices.SortStableFunc(evs, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	if rng.IntN(4) == 0 {
		for range 3 {
			i, j := rng.IntN(len(evs)), rng.IntN(len(evs))
			evs[i], evs[j] = evs[j], evs[i]
		}
	}
	for i := range evs {
		evs[i].Index = int64(i)
	}
	return evs
}

// bruteWrongToken is the wrong-token rules (CheckWrongToken's comment)
// read straight off the paired history, for TestWrongTokenMatchesOracle:
// each rejection, in the order of the operations, judged by scanning the
// whole history for what explains it, in the rules' order.
func bruteWrongToken(in checker.Input) (checker.Validity, WrongTokenDetails) {
	v := lockview.Of(in.History)
	d := WrongTokenDetails{Explained: map[string]int{}, Violations: []WrongToken{}}
	grants := map[string][]lockview.Op{} // every acquire answered ok, by key
	for _, o := range v.Ops {
		if o.F == history.FAcquire && o.Type == history.OK {
			grants[o.Key] = append(grants[o.Key], o)
		}
	}
	for i := range v.Ops {
		o := &v.Ops[i]
		if (o.F != history.FRead && o.F != history.FWrite) || !rejected(*o) {
			continue
		}
		d.Rejections++
		g, why := bruteExplain(v, grants[o.Key], in.Fencing, i)
		if why != "" {
			d.Explained[why]++
			continue
		}
		d.ViolationCount++
		d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, o.Done)
		if len(d.Violations) == in.Limit() {
			d.ViolationsOmitted++
			continue
		}
		d.Violations = append(d.Violations, wrongToken(g, o))
	}
	if d.ViolationCount > 0 {
		return checker.Invalid, d
	}
	return checker.Valid, d
}

// bruteExplain says why the rejection v.Ops[i] is no fault of its token,
// or "" with the holder's grant when nothing does; grants are every grant
// of its key.
func bruteExplain(v lockview.View, grants []lockview.Op, mode string, i int) (*lockview.Op, string) {
	o := &v.Ops[i]
	// The holder's grant: its last acquire or release of the key before
	// the rejection is an acquire answered ok.
	var g *lockview.Op
	at := -1
	for j := i - 1; j >= 0; j-- {
		if q := &v.Ops[j]; q.Process == o.Process && q.Key == o.Key && (q.F == history.FAcquire || q.F == history.FRelease) {
			if q.F == history.FAcquire && q.Type == history.OK {
				g, at = q, j
			}
			break
		}
	}
	if g == nil {
		return nil, ExplainedNotHolding
	}
	if mode == register.ModeStrict && o.F == history.FWrite {
		for _, q := range v.Ops[at+1 : i] {
			if q.Process == o.Process && q.Key == o.Key && q.F == history.FWrite && (q.Type != history.Fail || rejected(q)) {
				return g, ExplainedStrictSecond
			}
		}
	}
	gt, hasTok := g.Token()
	for _, b := range grants {
		if bt, ok := b.Token(); hasTok && ok && b.Index < g.Index && bt > gt {
			return g, ExplainedStaleGrant
		}
	}
	for _, e := range v.Instants {
		if e.Process == o.Process && e.F == history.FLost && e.Key == o.Key && e.Time >= g.Done && e.Time < o.Done {
			return g, ExplainedLost
		}
	}
	session := v.SessionAt(g.Process, g.Done)
	if _, ok := v.LossReported(g.Process, g.Key, session, g.Done, o.Done); ok {
		return g, ExplainedLost
	}
	if _, ok := v.GoneBefore(g.Process, session, g.Done, o.Done); ok {
		return g, ExplainedLost
	}
	for _, b := range grants {
		if b.Process != o.Process && b.Done > g.Done && b.Done < o.Done {
			return g, ExplainedNewerGrant
		}
	}
	return g, ""
}

// TestWrongTokenMatchesOracle: the checker gives bruteWrongToken's
// verdict and details on 2000 random histories (unlimited, and two
// violations listed), in both fencing modes, and fed event by event it
// reports every wrong token of its result.
func TestWrongTokenMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	invalid, relabelled := 0, 0
	for i := range 2000 {
		in := checker.Input{History: randomTokenHistory(rng), MaxViolations: []int{-1, 2}[i%2],
			Fencing: []string{register.ModeOn, register.ModeStrict}[i/2%2]}
		g := CheckWrongToken(context.Background(), in)
		wv, wd := bruteWrongToken(in)
		gj, _ := json.Marshal(g.Details)
		wj, _ := json.Marshal(wd)
		if !bytes.Equal(gj, wj) || g.Valid != wv {
			t.Fatalf("history %d: differs from the oracle\n got %s %s\nwant %s %s", i, gj, g.Valid, wj, wv)
		}
		if g.Valid == checker.Invalid {
			invalid++
		}
		if reportedBeyond(in) {
			relabelled++
		}
	}
	if invalid < 100 {
		t.Errorf("only %d inputs with wrong tokens: the test would not see a wrong one", invalid)
	}
	t.Logf("%d invalid; %d where an observation after the report explained a reported one", invalid, relabelled)
}

// reportedBeyond feeds the stream event by event and checks that it
// reports every wrong token of its result; it says whether it reported
// more (an observation made later, by no fault, explained one).
func reportedBeyond(in checker.Input) bool {
	s := NewWrongTokenStream(in.Limit(), in.Fencing, !lockview.Monotone(in.History))
	p := lockview.NewPairer()
	n := 0
	for _, e := range in.History {
		it := p.Add(e)
		n += len(s.Add(&it))
	}
	n += len(s.Finish())
	d := s.Result()
	if n < d.ViolationCount {
		panic(fmt.Sprintf("reported %d of %d wrong tokens", n, d.ViolationCount))
	}
	return n > d.ViolationCount
}
