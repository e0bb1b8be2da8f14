package lock

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/testkit/synth"
)

// randomLockHistory is a hand-made-by-dice lock history: a few processes
// taking keys with acquires that succeed, fail, time out or stay open,
// releases ok or revoked, grants that overlap, session events (connected,
// expired, closed) naming a few sessions in any spelling, lost events of
// every reason, and the nemesis' session-gone observations; with shuffled
// events now and then, so times need not grow with the index.
func randomLockHistory(rng *rand.Rand) []history.Event {
	var evs []history.Event
	unit := []int64{int64(time.Millisecond), int64(300 * time.Millisecond)}[rng.IntN(2)]
	add := func(t int64, p history.Process, typ history.Type, f, key string, v *history.Value, e string) {
		evs = append(evs, history.Event{Time: t * unit, Process: p, Type: typ, F: f, Key: key, Value: v, Error: e})
	}
	sessions := []string{"0x1a", "1A", "0x2b", "2b", "0x3c", ""}
	sess := func() string { return sessions[rng.IntN(len(sessions))] }
	keys := []string{"K", "L", "M"}[:1+rng.IntN(3)]
	procs := 2 + rng.IntN(4)
	wakeMax := []int{1, 4, 4, 60}[rng.IntN(4)] // 60: a running count
	tok := int64(0)
	for p := range procs {
		proc := history.Process(p)
		t := int64(rng.IntN(20))
		for range 5 + rng.IntN(25) {
			key := keys[rng.IntN(len(keys))]
			d := int64(1 + rng.IntN(15))
			switch r := rng.IntN(11); {
			case r < 4:
				tok++
				typ := []history.Type{history.OK, history.OK, history.OK, history.Fail, history.Info, ""}[rng.IntN(6)]
				add(t, proc, history.Invoke, history.FAcquire, key, nil, "")
				if typ != "" {
					v := &history.Value{Token: history.Int64(tok), Wakeups: history.Int64(int64(rng.IntN(wakeMax)))}
					add(t+d, proc, typ, history.FAcquire, key, v, "")
				}
			case r < 7:
				typ := []history.Type{history.OK, history.OK, history.Fail}[rng.IntN(3)]
				add(t, proc, history.Invoke, history.FRelease, key, nil, "")
				add(t+d, proc, typ, history.FRelease, key, nil, "")
			case r < 8:
				st := []string{"connected", "connected", "expired", "closed", "disconnected"}[rng.IntN(5)]
				add(t, proc, history.OK, history.FSession, "", &history.Value{Session: sess(), State: st}, "")
			case r < 9:
				st := []string{"expired", "session-changed", "released", "revoked"}[rng.IntN(4)]
				add(t, proc, history.OK, history.FLost, key, &history.Value{Session: sess(), State: st}, "")
			case r < 10:
				seen := t - int64(rng.IntN(30))
				add(t+int64(rng.IntN(40)), history.Nemesis, history.OK, history.FSessionGone, "",
					&history.Value{Session: sess(), TargetProcess: history.Int(p), LastSeenNS: history.Int64(seen * unit)}, "")
			default:
				target := []string{fmt.Sprintf("process %d (pid 9) holding %s", p, key), "all"}[rng.IntN(2)]
				add(t, history.Nemesis, history.Invoke, history.FPause, "", &history.Value{Target: target}, "")
				add(t+1, history.Nemesis, history.OK, history.FPause, "", &history.Value{Target: target}, "")
				if rng.IntN(4) > 0 {
					add(t+d, history.Nemesis, history.Invoke, history.FResume, "", nil, "")
					add(t+d+1, history.Nemesis, history.OK, history.FResume, "", nil, "")
				}
			}
			t += d + int64(rng.IntN(10))
		}
	}
	slices.SortStableFunc(evs, func(a, b history.Event) int { return int(a.Time - b.Time) })
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

// canonical is a result's details as JSON with every list of violations in
// one order: the former checker listed violations that happened at the
// same time in map order, so only the order among equals may differ.
func canonical(t *testing.T, r checker.Result) []byte {
	t.Helper()
	raw, err := json.Marshal(r.Details)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"overlaps", "false_releases"} {
		if l, ok := m[f].([]any); ok {
			slices.SortStableFunc(l, func(a, b any) int {
				x, _ := json.Marshal(a)
				y, _ := json.Marshal(b)
				return bytes.Compare(x, y)
			})
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, fmt.Sprintf(" %s %q", r.Valid, r.Error)...)
}

// differential runs a checker and its former version on the same input
// and demands the same verdict, error and details.
func differential(t *testing.T, name string, in checker.Input, got, want func(context.Context, checker.Input) checker.Result) {
	t.Helper()
	g, w := canonical(t, got(context.Background(), in)), canonical(t, want(context.Background(), in))
	if !bytes.Equal(g, w) {
		t.Fatalf("%s: differs from the oracle\n got %s\nwant %s", name, g, w)
	}
}

// oracleInputs are the histories of the differential tests: 3000 random
// ones (unlimited and with a limit of 2 violations listed), and synthetic
// runs with one key and with 8.
func oracleInputs(t *testing.T) map[string]checker.Input {
	ins := map[string]checker.Input{}
	rng := rand.New(rand.NewPCG(12, 5))
	for i := range 3000 {
		limit := -1
		if i%2 == 1 {
			limit = 2
		}
		ins[fmt.Sprintf("random %d", i)] = checker.Input{History: randomLockHistory(rng), MaxViolations: limit}
	}
	for _, keys := range []int{1, 8} {
		r, err := synth.Generate(synth.Spec{Ops: 5000, Keys: keys, Seed: uint64(keys), FaultEvery: time.Second, Pause: 8 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ins[fmt.Sprintf("synth %d keys", keys)] = checker.Input{History: r.Events, ApplyLog: r.ApplyLog, MaxViolations: -1}
	}
	return ins
}

func TestGrantOverlapMatchesOracle(t *testing.T) {
	invalid := 0
	for name, in := range oracleInputs(t) {
		if in.MaxViolations > 0 {
			// The former checker chose which violations to list in map
			// order: with a limit only the counts are its own.
			differential(t, name, in, countsOnly(CheckGrantOverlap), countsOnly(oracleGrantOverlap))
			continue
		}
		differential(t, name, in, CheckGrantOverlap, oracleGrantOverlap)
		if CheckGrantOverlap(context.Background(), in).Valid == checker.Invalid {
			invalid++
		}
	}
	if invalid < 100 {
		t.Errorf("only %d inputs with violations: the test would not see a wrong one", invalid)
	}
}

// countsOnly keeps the counts of a grant-overlap result.
func countsOnly(c func(context.Context, checker.Input) checker.Result) func(context.Context, checker.Input) checker.Result {
	return func(ctx context.Context, in checker.Input) checker.Result {
		r := c(ctx, in)
		d := r.Details.(GrantOverlapDetails)
		d.Overlaps, d.FalseReleases, d.FirstViolationTimeNS = nil, nil, nil
		return checker.Result{Valid: r.Valid, Details: d}
	}
}

// withoutError drops a result's error, which names one violation.
func withoutError(c func(context.Context, checker.Input) checker.Result) func(context.Context, checker.Input) checker.Result {
	return func(ctx context.Context, in checker.Input) checker.Result {
		r := c(ctx, in)
		return checker.Result{Valid: r.Valid, Details: r.Details}
	}
}

func TestLivenessMatchesOracle(t *testing.T) {
	invalid := 0
	for name, in := range oracleInputs(t) {
		differential(t, name, in, CheckLiveness, oracleLiveness)
		if CheckLiveness(context.Background(), in).Valid == checker.Invalid {
			invalid++
		}
	}
	if invalid < 100 {
		t.Errorf("only %d inputs with stalls: the test would not see a wrong one", invalid)
	}
}

func TestHerdMatchesOracle(t *testing.T) {
	var some, none int
	for name, in := range oracleInputs(t) {
		differential(t, name, in, CheckHerd, func(ctx context.Context, in checker.Input) checker.Result {
			return oracleHerdOf(ctx, in, history.FAcquire, history.FRelease)
		})
		if d := CheckHerd(context.Background(), in).Details.(HerdDetails); d.Implausible > 0 {
			some++
		} else if d.Acquires > 0 {
			none++
		}
	}
	if some < 100 || none < 100 {
		t.Errorf("%d inputs with implausible counts, %d without: too few for the test to see a wrong count", some, none)
	}
}

// exact runs a checker and its former version on the same input and
// demands byte-identical JSON, verdict and error: the streams must give
// results.json as it was.
func exact(t *testing.T, name string, in checker.Input, got, want func(context.Context, checker.Input) checker.Result) {
	t.Helper()
	g, w := got(context.Background(), in), want(context.Background(), in)
	gj, err := json.Marshal(g.Details)
	if err != nil {
		t.Fatal(err)
	}
	wj, err := json.Marshal(w.Details)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gj, wj) || g.Valid != w.Valid || g.Error != w.Error {
		t.Fatalf("%s: differs from the former checker\n got %s %s %q\nwant %s %s %q", name, gj, g.Valid, g.Error, wj, w.Valid, w.Error)
	}
}

func TestTokenOrderMatchesOracle(t *testing.T) {
	invalid := 0
	for name, in := range oracleInputs(t) {
		exact(t, name, in, CheckTokenOrder, oracleTokenOrder)
		if CheckTokenOrder(context.Background(), in).Valid == checker.Invalid {
			invalid++
		}
	}
	if invalid < 100 {
		t.Errorf("only %d inputs with regressions: the test would not see a wrong one", invalid)
	}
}

// longLockHistory is 40 random histories one after the other: long enough
// for a stream to forget grants it no longer needs (it prunes a key's
// grants past 64), so the tests see a stream that forgets too much.
func longLockHistory(rng *rand.Rand) []history.Event {
	var out []history.Event
	var offset int64
	for range 40 {
		h := randomLockHistory(rng)
		var end int64
		for _, e := range h {
			e.Time += offset
			end = max(end, e.Time)
			e.Index = int64(len(out))
			out = append(out, e)
		}
		offset = end + 1
	}
	if rng.IntN(4) > 0 { // mostly a clock that never goes back: the streams answer early
		slices.SortStableFunc(out, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
		for i := range out {
			out[i].Index = int64(i)
		}
	}
	return out
}

// TestLongHistoriesMatchOracle: on long histories, where the streams
// forget what they no longer need, grant-overlap and token-order still
// give the oracles' results. Histories laid end to end have violations at
// equal times, among which the grant-overlap oracle picks in map order:
// so its error (which names the first) is not compared, and with a limit
// (which violations are listed) only its counts are.
func TestLongHistoriesMatchOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for i := range 300 {
		in := checker.Input{History: longLockHistory(rng), MaxViolations: []int{-1, 3}[i%2]}
		name := fmt.Sprintf("long %d", i)
		if in.MaxViolations > 0 {
			differential(t, name, in, countsOnly(CheckGrantOverlap), countsOnly(oracleGrantOverlap))
		} else {
			differential(t, name, in, withoutError(CheckGrantOverlap), withoutError(oracleGrantOverlap))
		}
		exact(t, name, in, CheckTokenOrder, oracleTokenOrder)
	}
}

// TestOverlapStreamReportsEveryViolation: fed event by event, the stream
// returns every violation the final result holds (from Add, or at the
// latest from Finish), and no more than the rule allows: only an overlap
// that an observation made later excused can have been reported beyond
// the final count.
func TestOverlapStreamReportsEveryViolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	for i := range 500 {
		h := longLockHistory(rng)
		s := NewOverlapStream(checker.Input{MaxViolations: -1}.Limit(), !lockview.Monotone(h))
		p := lockview.NewPairer()
		reported := 0
		for _, e := range h {
			it := p.Add(e)
			reported += len(s.Add(&it))
		}
		reported += len(s.Finish())
		d := s.Result()
		final := d.OverlapCount + d.FalseReleaseCount
		if reported < final || reported > final+d.Excused[ExcusedSessionGone] {
			t.Fatalf("history %d: reported %d, final %d (%d excused by observations)", i, reported, final, d.Excused[ExcusedSessionGone])
		}
	}
}
