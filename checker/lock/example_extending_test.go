package lock

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
)

// This file is the checker example of docs/extending.md, quoted there
// verbatim (docs/extending_test.go keeps the two identical). A real
// checker is the same code in a file of its own, without the test.

// NameExampleGrantToken is the example checker's name, the name a
// gate uses.
const NameExampleGrantToken = "example-grant-token"

// NoToken is one grant without a token to fence with: none, or negative.
type NoToken struct {
	Index   int64  `json:"index"`
	Process int    `json:"process"`
	Key     string `json:"key"`
}

// GrantTokenDetails is the evidence: what was looked at and what was
// found, bounded (Keep) with the count exact.
type GrantTokenDetails struct {
	Grants         int       `json:"grants"`
	Missing        []NoToken `json:"missing"`
	MissingCount   int       `json:"missing_count"`
	MissingOmitted int       `json:"missing_omitted,omitempty"`
}

// CheckExampleGrantToken: every granted lock carries a token, and not a
// negative one (czxids and sequence numbers never are): a grant without
// one leaves its holder nothing to present to the fenced resource.
func CheckExampleGrantToken(ctx context.Context, in checker.Input) checker.Result {
	var d GrantTokenDetails
	for i, e := range in.History {
		if i%4096 == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		if e.F != history.FAcquire || e.Type != history.OK {
			continue
		}
		d.Grants++
		if e.Value == nil || e.Value.Token == nil || *e.Value.Token < 0 {
			d.MissingCount++
			checker.Keep(&d.Missing, &d.MissingOmitted, NoToken{e.Index, int(e.Process), e.Key}, in.Limit())
		}
	}
	switch {
	case d.MissingCount > 0:
		z := d.Missing[0]
		return checker.Result{Valid: checker.Invalid, Details: d,
			Error: fmt.Sprintf("%d of %d grants had no token, first history #%d (process %d, %s)",
				d.MissingCount, d.Grants, z.Index, z.Process, z.Key)}
	case d.Grants == 0:
		// No grant is no evidence: a run that never got a lock must not
		// pass this checker.
		return checker.Result{Valid: checker.Unknown, Details: d, Error: "no lock was granted"}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}

// TestExampleGrantToken runs the example as checker.Run runs every
// checker: on a good history, a bad one, and one with no grant.
func TestExampleGrantToken(t *testing.T) {
	ex := checker.Checker{Name: NameExampleGrantToken, Check: CheckExampleGrantToken}
	gate := []string{NameExampleGrantToken}
	for _, c := range []struct {
		name    string
		h       *checktest.Hist
		want    checker.Validity
		missing int
	}{
		{"tokens", new(checktest.Hist).Acquire(0, "SKU-1", 5).Release(0, "SKU-1").Acquire(1, "SKU-1", 7), checker.Valid, 0},
		{"sequence tokens from 0", new(checktest.Hist).Acquire(0, "SKU-1", 0).Release(0, "SKU-1").Acquire(1, "SKU-1", 1), checker.Valid, 0},
		{"a grant without a token", new(checktest.Hist).Acquire(0, "SKU-1", 5).Release(0, "SKU-1").
			Inv(1, history.FAcquire, "SKU-1").Ev(1, history.OK, history.FAcquire, "SKU-1", &history.Value{}, ""), checker.Invalid, 1},
		{"no grant", new(checktest.Hist).Inv(0, history.FAcquire, "SKU-1").Info(0, history.FAcquire, "SKU-1"), checker.Unknown, 0},
	} {
		res := checker.Run(context.Background(), checker.Input{History: c.h.Events}, gate, []checker.Checker{ex})
		if res.Valid != c.want {
			t.Errorf("%s: verdict %s, want %s (%v)", c.name, res.Valid, c.want, res.Reasons)
		}
		if d := res.Checkers[NameExampleGrantToken].Details.(GrantTokenDetails); d.MissingCount != c.missing {
			t.Errorf("%s: %d grants without a token in the evidence, want %d", c.name, d.MissingCount, c.missing)
		}
	}
}
