package election

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
)

// Violation kinds of the term-order checker.
const (
	// KindSharedTerm: two processes were elected with the same term.
	KindSharedTerm = "shared-term"
	// KindTermRegression: a campaign ok's term is not above every term
	// answered before it.
	KindTermRegression = "term-regression"
)

// TermViolation is a campaign ok whose term breaks the order; Earlier is
// the campaign ok it conflicts with (the same term, or the highest term
// before it).
type TermViolation struct {
	Kind    string     `json:"kind"`
	Later   Leadership `json:"later"`
	Earlier Leadership `json:"earlier"`
	Message string     `json:"message"`
}

// TermOrderDetails is the evidence of the term-order checker.
type TermOrderDetails struct {
	Campaigns int `json:"campaigns_ok"`
	// Untermed counts campaign oks that carried no term: not judged.
	Untermed             int             `json:"untermed"`
	Violations           []TermViolation `json:"violations"`
	ViolationCounts      map[string]int  `json:"violation_counts"`
	ViolationsOmitted    int             `json:"violations_omitted,omitempty"`
	FirstViolationTimeNS *int64          `json:"first_violation_time_ns,omitempty"`
}

// CheckTermOrder checks the terms the campaigns answered, in the order of
// their answers: every term belongs to one leader (a term is a czxid, so
// two processes with one term lead under one node), and every term is
// above all terms answered before (a later leader's node was created after
// the earlier leader's, so its czxid is higher; a lower one means a
// process was told it leads under an old node).
func CheckTermOrder(ctx context.Context, in checker.Input) checker.Result {
	ls := Leaderships(lockview.Of(in.History))
	d := TermOrderDetails{Violations: []TermViolation{}, ViolationCounts: map[string]int{KindSharedTerm: 0, KindTermRegression: 0}}
	owner := map[int64]Leadership{}
	var highest *Leadership
	limit := in.Limit()
	for i := range ls {
		if i&0xfff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		l := ls[i]
		d.Campaigns++
		if l.Term == nil {
			d.Untermed++
			continue
		}
		t := *l.Term
		var v *TermViolation
		if o, ok := owner[t]; ok && o.Process != l.Process {
			v = &TermViolation{Kind: KindSharedTerm, Later: l, Earlier: o,
				Message: fmt.Sprintf("process %d was elected with term %d at %s, which process %d was elected with at %s",
					l.Process, t, checker.Seconds(l.FromNS), o.Process, checker.Seconds(o.FromNS))}
		} else if highest != nil && t <= *highest.Term {
			v = &TermViolation{Kind: KindTermRegression, Later: l, Earlier: *highest,
				Message: fmt.Sprintf("process %d was elected with term %d at %s, not above term %s of process %d elected at %s",
					l.Process, t, checker.Seconds(l.FromNS), termText(highest.Term), highest.Process, checker.Seconds(highest.FromNS))}
		}
		if _, ok := owner[t]; !ok {
			owner[t] = l
		}
		if highest == nil || t > *highest.Term {
			highest = &ls[i]
		}
		if v == nil {
			continue
		}
		d.ViolationCounts[v.Kind]++
		d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, l.FromNS)
		if len(d.Violations) < limit {
			d.Violations = append(d.Violations, *v)
		} else {
			d.ViolationsOmitted++
		}
	}
	return termVerdict(d)
}

func termVerdict(d TermOrderDetails) checker.Result {
	n := d.ViolationCounts[KindSharedTerm] + d.ViolationCounts[KindTermRegression]
	switch {
	case n > 0:
		return checker.Result{Valid: checker.Invalid, Details: d,
			Error: fmt.Sprintf("%d campaign answers break the term order (%d shared terms, %d regressions); first: %s",
				n, d.ViolationCounts[KindSharedTerm], d.ViolationCounts[KindTermRegression], d.Violations[0].Message)}
	case d.Campaigns == 0:
		return checker.Result{Valid: checker.Unknown, Details: d, Error: "no campaign answered ok: no term to judge"}
	case d.Untermed > 0:
		return checker.Result{Valid: checker.Unknown, Details: d,
			Error: fmt.Sprintf("%d of %d campaign answers carry no term: cannot judge them", d.Untermed, d.Campaigns)}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}
