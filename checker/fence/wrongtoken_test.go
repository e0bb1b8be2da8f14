package fence

import (
	"context"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

func runWT(t *testing.T, es []history.Event, mode string) (checker.Result, WrongTokenDetails) {
	t.Helper()
	r := CheckWrongToken(context.Background(), checker.Input{History: es, Fencing: mode})
	d, ok := r.Details.(WrongTokenDetails)
	if !ok {
		t.Fatalf("details are %T (%s)", r.Details, r.Error)
	}
	return r, d
}

// reuse is the buggy worker: process 0's second grant (token 3) writes
// with its first grant's token (1), which its own read under token 3 has
// already fenced off. Nobody else was granted the key in between.
func reuse() *checktest.Hist {
	b := &checktest.Hist{}
	b.Section(0, "k", 1, 0, -1)
	b.Section(1, "k", 2, 1, 1)
	b.Acquire(0, "k", 3).Read(0, "k", 3, 2, 2).WriteInv(0, "k", 3).Rejected(0, "k", 1, 3, 3)
	return b
}

func TestWrongTokenReusedToken(t *testing.T) {
	b := reuse()
	b.Release(0, "k")
	r, d := runWT(t, b.Events, register.ModeOn)
	if r.Valid != checker.Invalid || d.ViolationCount != 1 || d.Rejections != 1 {
		t.Fatalf("reused token: %v %+v", r.Valid, d)
	}
	v := d.Violations[0]
	if v.Process != 0 || v.Key != "k" || v.Op != history.FWrite || *v.GrantToken != 3 || *v.Token != 1 || *v.Fence != 3 ||
		v.Index != b.Events[len(b.Events)-3].Index {
		t.Errorf("evidence %+v", v)
	}
	if !strings.Contains(r.Error, "wrong fencing token") || !strings.Contains(r.Error, v.Message) ||
		!strings.Contains(v.Message, "granted token 3") || !strings.Contains(v.Message, "with token 1 at fence 3") {
		t.Errorf("error %q", r.Error)
	}
	if *d.FirstViolationTimeNS != b.Events[len(b.Events)-3].Time {
		t.Errorf("first violation at %d", *d.FirstViolationTimeNS)
	}
}

// Each of these explains a holder's rejection; none is a wrong token.
func TestWrongTokenExplained(t *testing.T) {
	stale := func(between func(b *checktest.Hist)) []history.Event {
		b := &checktest.Hist{}
		b.Acquire(0, "k", 1).Read(0, "k", 1, 0, -1).WriteInv(0, "k", 1)
		between(b)
		b.Rejected(0, "k", 1, 1, 2)
		return b.Events
	}
	cases := []struct {
		name string
		es   []history.Event
		mode string
		why  string
	}{
		{"newer grant", stale(func(b *checktest.Hist) { b.Acquire(1, "k", 2).Read(1, "k", 2, 0, -1) }), register.ModeOn, ExplainedNewerGrant},
		{"lost", stale(func(b *checktest.Hist) {
			b.Instant(0, history.FLost, "k", &history.Value{State: "expired"})
		}), register.ModeOn, ExplainedLost},
		{"session expired", stale(func(b *checktest.Hist) {
			b.Instant(0, history.FSession, "", &history.Value{State: "expired", Session: "0x5"})
		}), register.ModeOn, ExplainedLost},
		{"session seen gone", stale(func(b *checktest.Hist) {
			b.Instant(-1, history.FSessionGone, "", &history.Value{TargetProcess: history.Int(0), Session: "0x5", LastSeenNS: history.Int64(40)})
		}), register.ModeOn, ExplainedLost},
		{"not holding", func() []history.Event {
			b := &checktest.Hist{}
			b.WriteInv(0, "k", 1).Rejected(0, "k", 1, 1, 2)
			return b.Events
		}(), register.ModeOn, ExplainedNotHolding},
		// The soak's case: process 1 was granted token 5 (and raised the
		// fence to it) before process 0's grant of token 1 came from a
		// server's stale view; the fence turns process 0 away.
		{"stale grant", func() []history.Event {
			b := &checktest.Hist{}
			b.Acquire(1, "k", 5).Read(1, "k", 5, 0, -1).Release(1, "k")
			b.Acquire(0, "k", 1).WriteInv(0, "k", 1).Rejected(0, "k", 1, 1, 5)
			return b.Events
		}(), register.ModeOn, ExplainedStaleGrant},
		{"strict second write", func() []history.Event {
			b := &checktest.Hist{}
			b.Acquire(0, "k", 1).Read(0, "k", 1, 0, -1).Write(0, "k", 1, 1).WriteInv(0, "k", 2).Rejected(0, "k", 1, 2, 1)
			return b.Events
		}(), register.ModeStrict, ExplainedStrictSecond},
	}
	for _, c := range cases {
		r, d := runWT(t, c.es, c.mode)
		if r.Valid != checker.Valid || d.Rejections != 1 || d.Explained[c.why] != 1 {
			t.Errorf("%s: %v %s %+v", c.name, r.Valid, r.Error, d)
		}
	}
	// A newer grant of another key, or one answered only after the
	// rejection, explains nothing.
	for name, between := range map[string]func(b *checktest.Hist){
		"other key": func(b *checktest.Hist) { b.Acquire(1, "j", 2) },
		"a gone session last seen after the rejection": func(b *checktest.Hist) {
			b.Instant(-1, history.FSessionGone, "", &history.Value{TargetProcess: history.Int(0), LastSeenNS: history.Int64(1 << 40)})
		},
	} {
		if r, _ := runWT(t, stale(between), register.ModeOn); r.Valid != checker.Invalid {
			t.Errorf("%s: %v", name, r.Valid)
		}
	}
}

// TestWrongTokenGenerated: simulated correct runs (with stale writes the
// fence turns away) have no wrong token in any mode; the same runs by a
// worker that reuses its first token are invalid here while the resource
// checkers stay valid.
func TestWrongTokenGenerated(t *testing.T) {
	for seed := range uint64(5) {
		for _, mode := range []string{register.ModeOff, register.ModeOn, register.ModeStrict} {
			spec := checktest.GenSpec{Seed: seed, Events: 3000, Keys: 2, WorkersPerKey: 3, InfoShare: 0.1, StaleShare: 0.05, Mode: mode}
			es, log := checktest.GenLockHistory(spec)
			in := checker.Input{History: es, ApplyLog: log, Fencing: mode}
			if r := CheckWrongToken(context.Background(), in); r.Valid != checker.Valid {
				t.Fatalf("%+v: %v %s", spec, r.Valid, r.Error)
			}
			if mode == register.ModeOff {
				continue
			}
			spec.ReuseFirstToken, spec.StaleShare = true, 0
			es, log = checktest.GenLockHistory(spec)
			in = checker.Input{History: es, ApplyLog: log, Fencing: mode}
			r := CheckWrongToken(context.Background(), in)
			var d WrongTokenDetails
			_ = r.DecodeDetails(&d)
			if r.Valid != checker.Invalid || d.ViolationCount == 0 || d.ViolationCount != d.Rejections {
				t.Fatalf("reused tokens, %+v: %v %d of %d", spec, r.Valid, d.ViolationCount, d.Rejections)
			}
			if r := CheckDoubleWriter(context.Background(), in); r.Valid != checker.Valid {
				t.Fatalf("reused tokens, double-writer %v %s", r.Valid, r.Error)
			}
		}
	}
}
