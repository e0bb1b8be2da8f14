package config

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
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

// TestMonotonicMatchesPrestream: the stream fed the whole history gives
// the former checker's results byte for byte (3000 random histories,
// unlimited and with 2 listed), and fed event by event it reports every
// regression of its result.
func TestMonotonicMatchesPrestream(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 2))
	invalid := 0
	for i := range 3000 {
		in := checker.Input{History: randomApplies(rng), MaxViolations: []int{-1, 2}[i%2]}
		g, w := CheckMonotonic(context.Background(), in), prestreamMonotonic(context.Background(), in)
		gj, _ := json.Marshal(g.Details)
		wj, _ := json.Marshal(w.Details)
		if !bytes.Equal(gj, wj) || g.Valid != w.Valid || g.Error != w.Error {
			t.Fatalf("history %d: differs\n got %s %s %q\nwant %s %s %q", i, gj, g.Valid, g.Error, wj, w.Valid, w.Error)
		}
		if g.Valid == checker.Invalid {
			invalid++
		}
	}
	if invalid < 300 {
		t.Errorf("only %d histories with regressions", invalid)
	}
}
