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

// TestWrongTokenMatchesPrestream: the stream fed the whole history gives
// the former checker's results byte for byte, on 2000 random histories
// (unlimited, and two violations listed), in both fencing modes.
func TestWrongTokenMatchesPrestream(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	invalid, relabelled := 0, 0
	for i := range 2000 {
		in := checker.Input{History: randomTokenHistory(rng), MaxViolations: []int{-1, 2}[i%2],
			Fencing: []string{register.ModeOn, register.ModeStrict}[i/2%2]}
		g, w := CheckWrongToken(context.Background(), in), prestreamWrongToken(context.Background(), in)
		gj, _ := json.Marshal(g.Details)
		wj, _ := json.Marshal(w.Details)
		if !bytes.Equal(gj, wj) || g.Valid != w.Valid || g.Error != w.Error {
			t.Fatalf("history %d: differs from the former checker\n got %s %s %q\nwant %s %s %q", i, gj, g.Valid, g.Error, wj, w.Valid, w.Error)
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
