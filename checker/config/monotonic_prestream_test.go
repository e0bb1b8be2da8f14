package config

// config-monotonic as it was before it became a stream
// (docs/architecture.md "Streaming checkers"): kept unchanged but for its
// name as the oracle of TestMonotonicMatchesPrestream.

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
)

func prestreamMonotonic(ctx context.Context, in checker.Input) checker.Result {
	v := viewOf(in.History)
	d := MonotonicDetails{Clients: len(v.clients), Applied: len(v.applies), Unversioned: v.unversioned}
	type pk struct {
		p   history.Process
		key string
	}
	highest := map[pk]applied{}
	var ev evidence[Regression]
	for i, a := range v.applies {
		if i&0xffff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		k := pk{a.Process, a.Key}
		h, seen := highest[k]
		if !seen || a.Version > h.Version {
			highest[k] = a
			continue
		}
		if a.Version < h.Version {
			ev.add(in.Limit(), regression(h, a), a.Time)
		}
	}
	d.Violations, d.ViolationCount, d.ViolationsOmitted, d.FirstViolationTimeNS = ev.violations(), ev.count, ev.omitted, ev.first
	if d.Applied == 0 {
		d.Note = "no client applied a version"
	}
	if ev.count == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d,
		Error: fmt.Sprintf("%d times a client applied an older config version than one it had applied; first: %s", ev.count, d.Violations[0].Message)}
}
