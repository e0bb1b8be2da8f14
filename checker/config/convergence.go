package config

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// Kinds of config-convergence violations.
const (
	// KindLate: the client applied the final version, after the bound.
	KindLate = "late"
	// KindNever: the client, alive at the end, never applied the final
	// version although the history goes on past the bound.
	KindNever = "never"
)

// Convergence is how long one live client took to apply its key's final
// version.
type Convergence struct {
	Process int    `json:"process"`
	Key     string `json:"key"`
	// FromNS is when the client could first have applied the final
	// version: the final update's ok, or the client's first event when
	// it started later.
	FromNS int64 `json:"from_ns"`
	// AppliedNS and Version are its first applied version at or above
	// the final one; absent when it applied none.
	AppliedNS *int64 `json:"applied_ns,omitempty"`
	Version   *int64 `json:"version,omitempty"`
	// ConvergenceMS is AppliedNS - FromNS, 0 when the client applied
	// before the admin's answer arrived.
	ConvergenceMS *float64 `json:"convergence_ms,omitempty"`
}

// Divergence is a live client that did not apply the final version in
// time.
type Divergence struct {
	Kind         string `json:"kind"`
	Process      int    `json:"process"`
	Key          string `json:"key"`
	FinalVersion int64  `json:"final_version"`
	DeadlineNS   int64  `json:"deadline_ns"`
	AppliedNS    *int64 `json:"applied_ns,omitempty"`
	// LastVersion is the highest version the client applied (never).
	LastVersion *int64 `json:"last_version,omitempty"`
	Message     string `json:"message"`
}

// Final is a key's final version: the highest an ok update produced.
type Final struct {
	Key     string `json:"key"`
	Version int64  `json:"version"`
	Digest  string `json:"digest"`
	Process int    `json:"process"`
	OKNS    int64  `json:"ok_ns"`
}

// ConvergenceDetails is the evidence of config-convergence.
type ConvergenceDetails struct {
	SessionTimeoutMS float64 `json:"session_timeout_ms"`
	// BoundMS is 2 x the session timeout + 1 s: a client cut off from the
	// ensemble may take two session timeouts to find a new session.
	BoundMS float64 `json:"bound_ms"`
	Finals  []Final `json:"finals"`
	// LiveClients are the client processes alive at the end (their last
	// event is not an info completion); RetiredClients the others.
	LiveClients    int           `json:"live_clients"`
	RetiredClients int           `json:"retired_clients"`
	Clients        []Convergence `json:"clients"`
	// MaxConvergenceMS and MedianConvergenceMS are over the live clients
	// that applied the final version.
	MaxConvergenceMS    *float64 `json:"max_convergence_ms,omitempty"`
	MedianConvergenceMS *float64 `json:"median_convergence_ms,omitempty"`
	// Undecided are live clients that had not applied the final version
	// when the history ended, before their deadline.
	Undecided []int `json:"undecided,omitempty"`
	// NoFinal are keys clients watched that no update answered ok for.
	NoFinal              []string     `json:"no_final,omitempty"`
	Violations           []Divergence `json:"violations"`
	ViolationCount       int          `json:"violation_count"`
	ViolationsOmitted    int          `json:"violations_omitted,omitempty"`
	FirstViolationTimeNS *int64       `json:"first_violation_time_ns,omitempty"`
}

// CheckConvergence checks that every client alive at the end applied its
// key's final version within the bound (2 x session timeout + 1 s) after
// the update that wrote it was acknowledged. The final version is the
// highest any ok update of the key produced (the runner has an admin
// write one after the last heal); a version above it (an update with an
// unknown outcome that landed) counts as reaching it. A client whose
// history ends before its deadline without it is undecided (unknown),
// and so is the check without a session timeout or an ok update.
func CheckConvergence(ctx context.Context, in checker.Input) checker.Result {
	if in.SessionTimeout <= 0 {
		return checker.Result{Valid: checker.Unknown,
			Error: "the session timeout is not known (checker.Input.SessionTimeout is 0): no convergence bound"}
	}
	v := viewOf(in.History)
	bound := 2*in.SessionTimeout + time.Second
	d := ConvergenceDetails{SessionTimeoutMS: ms(in.SessionTimeout), BoundMS: ms(bound), Clients: []Convergence{}}
	finals := finalsOf(v.updates)
	for _, k := range slices.Sorted(maps.Keys(finals)) {
		d.Finals = append(d.Finals, finals[k])
	}
	if len(finals) == 0 {
		return checker.Result{Valid: checker.Unknown, Details: d,
			Error: "no config update answered ok: there is no final version to converge to"}
	}
	live := liveAtEnd(in.History)
	w := convWalk{v: v, bound: bound, limit: in.Limit(), d: &d, byClient: map[client][]applied{}}
	for _, a := range v.applies {
		c := client{a.Process, a.Key}
		w.byClient[c] = append(w.byClient[c], a)
	}
	noFinal := map[string]bool{}
	for _, c := range sortedClients(v.clients) {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		if !live[c.p] {
			d.RetiredClients++
			continue
		}
		d.LiveClients++
		f, ok := finals[c.key]
		if !ok {
			noFinal[c.key] = true
			continue
		}
		w.client(c, f)
	}
	d.NoFinal = slices.Sorted(maps.Keys(noFinal))
	d.Violations, d.ViolationCount, d.ViolationsOmitted, d.FirstViolationTimeNS = w.ev.violations(), w.ev.count, w.ev.omitted, w.ev.first
	figures(&d)
	return verdict(d)
}

// verdict: invalid on a violation, else unknown when something could not
// be decided.
func verdict(d ConvergenceDetails) checker.Result {
	var why []string
	switch {
	case d.ViolationCount > 0:
		return checker.Result{Valid: checker.Invalid, Details: d,
			Error: fmt.Sprintf("%d live clients did not apply the final config within %s; first: %s",
				d.ViolationCount, time.Duration(d.BoundMS*float64(time.Millisecond)), d.Violations[0].Message)}
	case d.LiveClients == 0:
		why = append(why, "no client was alive at the end")
	}
	if len(d.Undecided) > 0 {
		why = append(why, fmt.Sprintf("the history ends before the deadline of live clients %v, which had not applied the final version", d.Undecided))
	}
	if len(d.NoFinal) > 0 {
		why = append(why, fmt.Sprintf("no update of %q answered ok, so its clients have no final version", d.NoFinal))
	}
	if len(why) > 0 {
		return checker.Result{Valid: checker.Unknown, Details: d, Error: strings.Join(why, "; ")}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}

// convWalk judges one live client at a time.
type convWalk struct {
	v     view
	bound time.Duration
	limit int
	d     *ConvergenceDetails
	ev    evidence[Divergence]
	// byClient are the applied versions of each client, in history order.
	byClient map[client][]applied
}

func (w *convWalk) client(c client, f Final) {
	cv := Convergence{Process: int(c.p), Key: c.key, FromNS: max(f.OKNS, w.v.clients[c])}
	deadline := cv.FromNS + int64(w.bound)
	var last *int64
	for _, a := range w.byClient[c] {
		if a.Version >= f.Version {
			cv.AppliedNS, cv.Version = history.Int64(a.Time), history.Int64(a.Version)
			cv.ConvergenceMS = new(ms(time.Duration(max(0, a.Time-cv.FromNS))))
			break
		}
		last = history.Int64(max(a.Version, deref(last, a.Version)))
	}
	w.d.Clients = append(w.d.Clients, cv)
	dv := Divergence{Process: cv.Process, Key: c.key, FinalVersion: f.Version, DeadlineNS: deadline, AppliedNS: cv.AppliedNS, LastVersion: last}
	switch {
	case cv.AppliedNS != nil && *cv.AppliedNS <= deadline:
	case cv.AppliedNS != nil:
		dv.Kind = KindLate
		dv.Message = fmt.Sprintf("process %d applied the final version %d of %q at %s, %s after %s (the bound is %s)",
			dv.Process, f.Version, c.key, checker.Seconds(*cv.AppliedNS), time.Duration(*cv.AppliedNS-cv.FromNS), checker.Seconds(cv.FromNS), w.bound)
		w.ev.add(w.limit, dv, deadline)
	case w.v.End < deadline:
		w.d.Undecided = append(w.d.Undecided, cv.Process)
	default:
		dv.Kind = KindNever
		dv.Message = fmt.Sprintf("process %d, alive at the end, never applied the final version %d of %q (written by process %d, answered at %s; deadline %s); its last applied version: %s",
			dv.Process, f.Version, c.key, f.Process, checker.Seconds(f.OKNS), checker.Seconds(deadline), versionText(last))
		w.ev.add(w.limit, dv, deadline)
	}
}

// finalsOf is each key's final version: its ok update with the highest
// new version (the last answered among equals).
func finalsOf(ups []lockview.Op) map[string]Final {
	out := map[string]Final{}
	for _, o := range ups {
		ver, dig, ok := written(o)
		if !ok {
			continue
		}
		if f, seen := out[o.Key]; seen && (ver < f.Version || (ver == f.Version && o.Done < f.OKNS)) {
			continue
		}
		out[o.Key] = Final{Key: o.Key, Version: ver, Digest: dig, Process: int(o.Process), OKNS: o.Done}
	}
	return out
}

// liveAtEnd says, per worker process, whether it was alive when the
// history ended: its last event is not an info completion (a retired
// process's successor is another process).
func liveAtEnd(h []history.Event) map[history.Process]bool {
	out := map[history.Process]bool{}
	for _, e := range h {
		if e.Process != history.Nemesis {
			out[e.Process] = e.Type != history.Info
		}
	}
	return out
}

// figures fills the maximum and median convergence times.
func figures(d *ConvergenceDetails) {
	var ts []float64
	for _, c := range d.Clients {
		if c.ConvergenceMS != nil {
			ts = append(ts, *c.ConvergenceMS)
		}
	}
	if len(ts) == 0 {
		return
	}
	slices.Sort(ts)
	d.MaxConvergenceMS, d.MedianConvergenceMS = new(ts[len(ts)-1]), new(ts[len(ts)/2])
}

func sortedClients(m map[client]int64) []client {
	out := slices.Collect(maps.Keys(m))
	slices.SortFunc(out, func(a, b client) int {
		if a.key != b.key {
			return strings.Compare(a.key, b.key)
		}
		return int(a.p) - int(b.p)
	})
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func deref(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

func versionText(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
