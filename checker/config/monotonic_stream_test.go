package config

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
)

// randomApplies is a config history by dice: clients watching (answered
// ok with a version or without, failed, left open) and applying versions
// that go up and now and then down, two keys, admins updating; sometimes
// with indexes that do not follow the file.
func randomApplies(rng *rand.Rand) []history.Event {
	var evs []history.Event
	t := int64(0)
	add := func(p history.Process, typ history.Type, f, key string, v *history.Value) {
		t += int64(rng.IntN(3))
		evs = append(evs, history.Event{Time: t, Process: p, Type: typ, F: f, Key: key, Value: v})
	}
	version := func() *history.Value {
		if rng.IntN(8) == 0 {
			return &history.Value{}
		}
		return &history.Value{Version: history.Int64(int64(rng.IntN(6))), Digest: "d"}
	}
	keys := []string{"C", "D"}
	for range 20 + rng.IntN(60) {
		p := history.Process(rng.IntN(5))
		key := keys[rng.IntN(2)]
		switch rng.IntN(5) {
		case 0:
			add(p, history.Invoke, history.FWatch, key, nil)
			if typ := []history.Type{history.OK, history.OK, history.Fail, ""}[rng.IntN(4)]; typ != "" {
				add(p, typ, history.FWatch, key, version())
			}
		case 1:
			add(5, history.Invoke, history.FUpdate, key, nil)
			add(5, history.OK, history.FUpdate, key, version())
		default:
			add(p, history.OK, history.FApplied, key, version())
		}
	}
	for i := range evs {
		evs[i].Index = int64(i)
	}
	if rng.IntN(4) == 0 {
		i, j := rng.IntN(len(evs)), rng.IntN(len(evs))
		evs[i].Index, evs[j].Index = evs[j].Index, evs[i].Index
	}
	return evs
}

// bruteMonotonic is config-monotonic's rule read straight off the
// events, for TestMonotonicMatchesOracle: a client process's versions
// applied to a key (its watch's ok and its applied events) in index order,
// each compared with every one before it; a version below the highest
// before it (the first that reached it) is a regression. Messages are
// left empty.
func bruteMonotonic(h []history.Event, limit int) (checker.Validity, MonotonicDetails) {
	type apply struct {
		p         history.Process
		key       string
		t, i, ver int64
	}
	type pk struct {
		p   history.Process
		key string
	}
	clients := map[pk]bool{}
	var as []apply
	d := MonotonicDetails{Violations: []Regression{}}
	for _, e := range h {
		watched := e.F == history.FWatch && e.Type == history.Invoke
		if watched || e.F == history.FApplied {
			clients[pk{e.Process, e.Key}] = true
		}
		if e.F != history.FApplied && (e.F != history.FWatch || e.Type != history.OK) {
			continue
		}
		if e.Value == nil || e.Value.Version == nil {
			d.Unversioned++
			continue
		}
		as = append(as, apply{e.Process, e.Key, e.Time, e.Index, *e.Value.Version})
	}
	slices.SortStableFunc(as, func(a, b apply) int { return cmp.Or(cmp.Compare(a.i, b.i), cmp.Compare(a.t, b.t)) })
	d.Clients, d.Applied = len(clients), len(as)
	for i, a := range as {
		hi := -1
		for j, b := range as[:i] {
			if b.p == a.p && b.key == a.key && (hi < 0 || b.ver > as[hi].ver) {
				hi = j
			}
		}
		if hi < 0 || a.ver >= as[hi].ver {
			continue
		}
		d.ViolationCount++
		d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, a.t)
		if len(d.Violations) == limit {
			d.ViolationsOmitted++
			continue
		}
		d.Violations = append(d.Violations, Regression{Process: int(a.p), Key: a.key, EarlierVersion: as[hi].ver,
			EarlierNS: as[hi].t, LaterVersion: a.ver, LaterNS: a.t, Index: a.i})
	}
	if d.Applied == 0 {
		d.Note = "no client applied a version"
	}
	if d.ViolationCount > 0 {
		return checker.Invalid, d
	}
	return checker.Valid, d
}

// TestMonotonicMatchesOracle: the checker gives bruteMonotonic's verdict
// and details (messages aside) on 3000 random histories, unlimited and
// with 2 regressions listed.
func TestMonotonicMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 2))
	invalid := 0
	for i := range 3000 {
		in := checker.Input{History: randomApplies(rng), MaxViolations: []int{-1, 2}[i%2]}
		g := CheckMonotonic(context.Background(), in)
		gd := g.Details.(MonotonicDetails)
		for j := range gd.Violations {
			gd.Violations[j].Message = ""
		}
		wv, wd := bruteMonotonic(in.History, in.Limit())
		gj, _ := json.Marshal(gd)
		wj, _ := json.Marshal(wd)
		if !bytes.Equal(gj, wj) || g.Valid != wv {
			t.Fatalf("history %d: differs from the oracle\n got %s %s\nwant %s %s", i, gj, g.Valid, wj, wv)
		}
		if g.Valid == checker.Invalid {
			invalid++
		}
	}
	if invalid < 300 {
		t.Errorf("only %d histories with regressions", invalid)
	}
}
