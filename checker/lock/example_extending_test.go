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

// NameExamplePositiveToken is the example checker's name, the name a
// gate uses.
const NameExamplePositiveToken = "example-positive-token"

// ZeroToken is one grant whose token cannot fence: zero or below, or none.
type ZeroToken struct {
	Index   int64  `json:"index"`
	Process int    `json:"process"`
	Key     string `json:"key"`
}

// PositiveTokenDetails is the evidence: what was looked at and what was
// found, bounded (Keep) with the count exact.
type PositiveTokenDetails struct {
	Grants      int         `json:"grants"`
	Zero        []ZeroToken `json:"zero"`
	ZeroCount   int         `json:"zero_count"`
	ZeroOmitted int         `json:"zero_omitted,omitempty"`
}

// CheckExamplePositiveToken: every granted lock carries a token above
// zero. The register's fence admits a token not below the key's fence,
// so a recipe that presents no token (0) is only ever fenced by luck.
func CheckExamplePositiveToken(ctx context.Context, in checker.Input) checker.Result {
	var d PositiveTokenDetails
	for i, e := range in.History {
		if i%4096 == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		if e.F != history.FAcquire || e.Type != history.OK {
			continue
		}
		d.Grants++
		if e.Value == nil || e.Value.Token == nil || *e.Value.Token <= 0 {
			d.ZeroCount++
			checker.Keep(&d.Zero, &d.ZeroOmitted, ZeroToken{e.Index, int(e.Process), e.Key}, in.Limit())
		}
	}
	switch {
	case d.ZeroCount > 0:
		z := d.Zero[0]
		return checker.Result{Valid: checker.Invalid, Details: d,
			Error: fmt.Sprintf("%d of %d grants had no usable token, first history #%d (process %d, %s)",
				d.ZeroCount, d.Grants, z.Index, z.Process, z.Key)}
	case d.Grants == 0:
		// No grant is no evidence: a run that never got a lock must not
		// pass this checker.
		return checker.Result{Valid: checker.Unknown, Details: d, Error: "no lock was granted"}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}

// TestExamplePositiveToken runs the example as checker.Run runs every
// checker: on a good history, a bad one, and one with no grant.
func TestExamplePositiveToken(t *testing.T) {
	ex := checker.Checker{Name: NameExamplePositiveToken, Check: CheckExamplePositiveToken}
	gate := []string{NameExamplePositiveToken}
	for _, c := range []struct {
		name string
		h    *checktest.Hist
		want checker.Validity
		zero int
	}{
		{"tokens", new(checktest.Hist).Acquire(0, "SKU-1", 5).Release(0, "SKU-1").Acquire(1, "SKU-1", 7), checker.Valid, 0},
		{"a zero token", new(checktest.Hist).Acquire(0, "SKU-1", 5).Release(0, "SKU-1").Acquire(1, "SKU-1", 0), checker.Invalid, 1},
		{"no grant", new(checktest.Hist).Inv(0, history.FAcquire, "SKU-1").Info(0, history.FAcquire, "SKU-1"), checker.Unknown, 0},
	} {
		res := checker.Run(context.Background(), checker.Input{History: c.h.Events}, gate, []checker.Checker{ex})
		if res.Valid != c.want {
			t.Errorf("%s: verdict %s, want %s (%v)", c.name, res.Valid, c.want, res.Reasons)
		}
		if d := res.Checkers[NameExamplePositiveToken].Details.(PositiveTokenDetails); d.ZeroCount != c.zero {
			t.Errorf("%s: %d zero tokens in the evidence, want %d", c.name, d.ZeroCount, c.zero)
		}
	}
}
