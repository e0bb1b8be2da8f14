package stats

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/zkchaos/zkchaos/checker"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Name is the stats checker's name.
const Name = "stats"

// OpCounts counts completions of one operation. An invocation that never
// completed counts as info: by Jepsen's model it may or may not have
// happened.
type OpCounts struct {
	OK   int `json:"ok"`
	Fail int `json:"fail"`
	Info int `json:"info"`
}

// Percentiles summarise a distribution in milliseconds (nearest rank).
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// RegisterCounts is what the apply log says the register did.
type RegisterCounts struct {
	Entries        int `json:"entries"`
	AcceptedWrites int `json:"accepted_writes"`
	RejectedWrites int `json:"rejected_writes"`
	AcceptedReads  int `json:"accepted_reads"`
	RejectedReads  int `json:"rejected_reads"`
	// TokenRejections is every rejected entry: the fence turning a stale
	// holder away.
	TokenRejections int            `json:"token_rejections"`
	ByReason        map[string]int `json:"rejections_by_reason,omitempty"`
}

// StatsDetails is the evidence of the stats checker; it informs and never
// fails a run.
type StatsDetails struct {
	Ops map[string]OpCounts `json:"ops"`
	// LatencyMS is invocation-to-completion time of ok and fail
	// completions per operation; info completions are left out because
	// their "latency" is the timeout, not the system.
	LatencyMS map[string]Percentiles `json:"latency_ms"`
	// LockWaitMS is the latency of acquires that got the lock.
	LockWaitMS Percentiles `json:"lock_wait_ms"`
	// HoldMS runs from an acquire's ok to the completion (of any type) of
	// the same process's release of the same key.
	HoldMS Percentiles `json:"hold_ms"`
	// Sessions counts session events by state.
	Sessions map[string]int `json:"sessions"`
	// Lost counts lock losses the recipe noticed, by state (why).
	Lost        int            `json:"lost"`
	LostByState map[string]int `json:"lost_by_state,omitempty"`
	// Late counts responses of retired processes, by original operation.
	Late     int            `json:"late"`
	LateByOp map[string]int `json:"late_by_op,omitempty"`
	// Nemesis counts nemesis operations by f. NemesisUnverified counts the
	// completions of fault starts and stops (and of the final restore)
	// whose effect was not verified: info (the scheduler's record of an
	// injection or undo it could not confirm, verified or not) or ok with
	// verified false; NemesisUnverifiedByF splits it by f.
	Nemesis              map[string]OpCounts `json:"nemesis"`
	NemesisUnverified    int                 `json:"nemesis_unverified"`
	NemesisUnverifiedByF map[string]int      `json:"nemesis_unverified_by_f,omitempty"`
	// Timeouts counts completions whose error mentions a timeout.
	Timeouts int `json:"timeouts"`
	// UnmatchedCompletions had no pending invocation of their process: a
	// sign of a damaged history or a recorder bug.
	UnmatchedCompletions int `json:"unmatched_completions"`
	// Processes counts distinct worker processes (retirements make new ones).
	Processes       int            `json:"processes"`
	Events          int            `json:"events"`
	DurationS       float64        `json:"duration_s"`
	AcquiresPerS    float64        `json:"acquires_per_s"`
	Register        RegisterCounts `json:"register"`
	TokenRejections int            `json:"token_rejections"`
}

// CheckStats computes the run's numbers. It is valid whenever it finishes.
func CheckStats(ctx context.Context, in checker.Input) checker.Result {
	d := StatsDetails{Ops: map[string]OpCounts{}, LatencyMS: map[string]Percentiles{},
		Sessions: map[string]int{}, Nemesis: map[string]OpCounts{}, Events: len(in.History)}
	type holdKey struct {
		p   history.Process
		key string
	}
	// Instant events (session, lost, late) are recorded while the same
	// process may have an operation in flight, so they pair on their own.
	type pendKey struct {
		p       history.Process
		instant bool
	}
	pending := map[pendKey]history.Event{}
	holds := map[holdKey]int64{}
	procs := map[history.Process]struct{}{}
	lat := map[string][]int64{}
	var wait, hold []int64
	count := func(f string, t history.Type, nemesis bool) {
		c := d.Ops[f]
		bump(&c, t)
		d.Ops[f] = c
		if nemesis {
			n := d.Nemesis[f]
			bump(&n, t)
			d.Nemesis[f] = n
		}
	}
	var first, last int64
	for i, e := range in.History {
		if i&0xffff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		if i == 0 || e.Time < first {
			first = e.Time
		}
		last = max(last, e.Time)
		if e.Process != history.Nemesis {
			procs[e.Process] = struct{}{}
		}
		pk := pendKey{e.Process, checker.IsInstant(e.F)}
		if e.Type == history.Invoke {
			if prev, ok := pending[pk]; ok {
				// A process invoked again without completing: the earlier
				// operation's outcome is unknown.
				count(prev.F, history.Info, prev.Process == history.Nemesis)
			}
			pending[pk] = e
			continue
		}
		if strings.Contains(strings.ToLower(e.Error), "timeout") || strings.Contains(strings.ToLower(e.Error), "timed out") {
			d.Timeouts++
		}
		inv, ok := pending[pk]
		if ok {
			delete(pending, pk)
		} else {
			d.UnmatchedCompletions++
		}
		count(e.F, e.Type, e.Process == history.Nemesis)
		var state string
		if e.Value != nil {
			state = e.Value.State
		}
		switch e.F {
		case history.FSession:
			if e.Type == history.OK {
				d.Sessions[orUnknown(state)]++
			}
			continue
		case history.FLost:
			if e.Type == history.OK {
				d.Lost++
				addCount(&d.LostByState, orUnknown(state))
			}
			continue
		case history.FLate:
			if e.Type == history.OK {
				d.Late++
				of := ""
				if e.Value != nil {
					of = e.Value.Of
				}
				addCount(&d.LateByOp, orUnknown(of))
			}
			continue
		}
		if unverifiedFault(e) {
			d.NemesisUnverified++
			addCount(&d.NemesisUnverifiedByF, e.F)
		}
		if !ok {
			continue
		}
		dt := e.Time - inv.Time
		if e.Type == history.OK || e.Type == history.Fail {
			lat[e.F] = append(lat[e.F], dt)
		}
		hk := holdKey{e.Process, e.Key}
		switch {
		case e.F == history.FAcquire && e.Type == history.OK:
			wait = append(wait, dt)
			holds[hk] = e.Time
		case e.F == history.FRelease:
			if t, ok := holds[hk]; ok {
				hold = append(hold, e.Time-t)
				delete(holds, hk)
			}
		}
	}
	for _, inv := range pending {
		count(inv.F, history.Info, inv.Process == history.Nemesis)
	}
	for f, xs := range lat {
		d.LatencyMS[f] = percentiles(xs)
	}
	d.LockWaitMS = percentiles(wait)
	d.HoldMS = percentiles(hold)
	d.Processes = len(procs)
	if len(in.History) > 0 {
		d.DurationS = float64(last-first) / 1e9
	}
	if d.DurationS > 0 {
		d.AcquiresPerS = float64(d.Ops[history.FAcquire].OK) / d.DurationS
	}
	d.Register = registerCounts(in.ApplyLog)
	d.TokenRejections = d.Register.TokenRejections
	return checker.Result{Valid: checker.Valid, Details: d}
}

// unverifiedFault is a nemesis completion of a fault's start or stop (or
// of the final restore) whose effect nobody confirmed: an info (the
// scheduler records every injection or undo it could not verify, and
// every outcome it does not know, as info) or an ok that says it was not
// verified.
func unverifiedFault(e history.Event) bool {
	if e.Process != history.Nemesis || e.Type == history.Invoke || e.Type == history.Fail {
		return false
	}
	if !history.IsFaultStart(e.F) && !history.IsFaultStop(e.F) && e.F != history.FRestore {
		return false
	}
	return e.Type == history.Info || (e.Value != nil && e.Value.Verified != nil && !*e.Value.Verified)
}

func bump(c *OpCounts, t history.Type) {
	switch t {
	case history.OK:
		c.OK++
	case history.Fail:
		c.Fail++
	default:
		c.Info++
	}
}

func addCount(m *map[string]int, k string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func registerCounts(log []register.Entry) RegisterCounts {
	c := RegisterCounts{Entries: len(log)}
	for _, e := range log {
		switch {
		case e.Op == register.OpWrite && e.Accepted:
			c.AcceptedWrites++
		case e.Op == register.OpWrite:
			c.RejectedWrites++
		case e.Accepted:
			c.AcceptedReads++
		default:
			c.RejectedReads++
		}
		if !e.Accepted {
			c.TokenRejections++
			addCount(&c.ByReason, orUnknown(e.Reason))
		}
	}
	return c
}

// NearestRank is the q-quantile of sorted (not empty) by the nearest-rank
// rule, the one every figure and table of a run uses.
func NearestRank(sorted []int64, q float64) int64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// percentiles takes nanosecond durations and sorts xs in place.
func percentiles(xs []int64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	slices.Sort(xs)
	rank := func(q float64) float64 { return float64(NearestRank(xs, q)) / 1e6 }
	return Percentiles{Count: len(xs), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99),
		Max: float64(xs[len(xs)-1]) / 1e6}
}
