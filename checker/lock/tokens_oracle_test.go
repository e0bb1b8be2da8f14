package lock

// The token-order checker as it was before it became a stream
// (docs/measurements.md "Streaming checkers"): kept unchanged but for
// its name as the oracle of TestTokenOrderMatchesOracle.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// CheckTokenOrder checks the one property a fencing token must have
// (docs/background.md#why-a-lock-needs-a-fence): a later grant of a lock has a higher token than every
// earlier grant, so that the resource can tell the current holder from a
// stale one. A token that only identifies a grant (random, a UUID) or
// repeats (a coarse clock) fails here whether or not the run was fenced.
// Grants are ordered by their acquire's ok, which for any two grants of a
// working lock comes in grant order: the second cannot be granted before
// the first's node is gone, which is after the first's ok was sent.
func oracleTokenOrder(ctx context.Context, in checker.Input) checker.Result {
	v := lockview.Of(in.History)
	d := TokenOrderDetails{Regressions: []TokenRegression{}}
	type g struct {
		t   int64
		p   history.Process
		tok int64
	}
	byKey := map[string][]g{}
	for _, o := range v.Ops {
		if o.F != history.FAcquire || o.Type != history.OK {
			continue
		}
		if tok, ok := o.Token(); ok {
			byKey[o.Key] = append(byKey[o.Key], g{o.Done, o.Process, tok})
			d.Grants++
		}
	}
	limit := in.Limit()
	keys := slices.Sorted(maps.Keys(byKey))
	for _, k := range keys {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		gs := byKey[k]
		sort.SliceStable(gs, func(i, j int) bool { return gs[i].t < gs[j].t })
		for i := 1; i < len(gs); i++ {
			a, b := gs[i-1], gs[i]
			if b.tok > a.tok {
				continue
			}
			d.RegressionCount++
			if len(d.Regressions) >= limit {
				d.RegressionsOmitted++
				continue
			}
			d.Regressions = append(d.Regressions, TokenRegression{Key: k, Tokens: [2]int64{a.tok, b.tok},
				Processes: [2]int{int(a.p), int(b.p)}, TimesNS: [2]int64{a.t, b.t}})
		}
	}
	if d.RegressionCount > 0 {
		r := d.Regressions[0]
		for _, g := range d.Regressions {
			d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, g.TimesNS[1])
		}
		return checker.Result{Valid: checker.Invalid, Details: d, Error: fmt.Sprintf("%d grants did not raise the token, first on %s: %d then %d",
			d.RegressionCount, r.Key, r.Tokens[0], r.Tokens[1])}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}
