// Package config holds the checkers of the config workload
// (docs/background.md#configuration-notification): admin processes read the config node
// /config/<key> and update it by compare-and-set (setData with the version
// they read); client processes watch it, re-read it on every notification
// and report every version they applied, with a digest of its data.
//
// Four questions, one checker each: does a client ever go back to an
// older version (config-monotonic), is every applied (version, digest)
// pair one that was written (config-consistent), did every live client
// reach the final version in time (config-convergence), and did every
// acknowledged update build on the version it read (config-cas).
// Everything is judged per config key.
package config

import (
	"cmp"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// Names of the config checkers.
const (
	NameMonotonic   = "config-monotonic"
	NameConsistent  = "config-consistent"
	NameConvergence = "config-convergence"
	NameCAS         = "config-cas"
)

// DefaultGate is the gate of a config run: all four checkers.
var DefaultGate = []string{NameConsistent, NameMonotonic, NameConvergence, NameCAS}

// All returns the config workload's checkers.
func All() []checker.Checker {
	return []checker.Checker{
		{Name: NameMonotonic, Check: CheckMonotonic},
		// A pair applied that nobody wrote, one version with two data,
		// and a broken compare-and-set chain stay so whatever is
		// recorded later (an update still open counts as possibly
		// written), so both judge a run still going as they judge a
		// whole one. Convergence asks about the final version, which
		// only the run's end writes.
		{Name: NameConsistent, Check: CheckConsistent, SoFar: CheckConsistent},
		{Name: NameConvergence, Check: CheckConvergence},
		{Name: NameCAS, Check: CheckCAS, SoFar: CheckCAS},
	}
}

// applied is one version a client applied: its watch's first version or
// an applied event.
type applied struct {
	Process history.Process
	Key     string
	F       string
	Time    int64
	Index   int64
	Version int64
	Digest  string
}

// view is a config history: the admins' updates paired, and the clients'
// applied versions in history order.
type view struct {
	lockview.View
	updates []lockview.Op
	applies []applied
	// unversioned counts watch oks and applied events without a version,
	// which no checker can place.
	unversioned int
	// clients are the processes that watched or applied a key, with the
	// time of their first event on it.
	clients map[client]int64
}

// client is a client process on one config key.
type client struct {
	p   history.Process
	key string
}

// viewOf reads a history the way every config checker does, pairing
// operations as the lock checkers do (lockview.Of).
func viewOf(h []history.Event) view {
	v := view{View: lockview.Of(h), clients: map[client]int64{}}
	for _, o := range v.Ops {
		switch o.F {
		case history.FUpdate:
			v.updates = append(v.updates, o)
		case history.FWatch:
			v.client(client{o.Process, o.Key}, o.Invoke)
			if o.Type == history.OK {
				v.add(o.Process, o.Key, o.F, o.Done, o.Index, o.Value)
			}
		}
	}
	for _, e := range v.Instants {
		if e.F == history.FApplied {
			v.client(client{e.Process, e.Key}, e.Time)
			v.add(e.Process, e.Key, e.F, e.Time, e.Index, e.Value)
		}
	}
	slices.SortStableFunc(v.applies, func(a, b applied) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Time, b.Time))
	})
	return v
}

func (v *view) client(c client, t int64) {
	if first, ok := v.clients[c]; !ok || t < first {
		v.clients[c] = t
	}
}

func (v *view) add(p history.Process, key, f string, t, index int64, val *history.Value) {
	if val == nil || val.Version == nil {
		v.unversioned++
		return
	}
	v.applies = append(v.applies, applied{Process: p, Key: key, F: f, Time: t, Index: index,
		Version: *val.Version, Digest: val.Digest})
}

// written is an ok update's (version, digest).
func written(o lockview.Op) (version int64, digest string, ok bool) {
	if o.Type != history.OK || o.Value == nil || o.Value.Version == nil {
		return 0, "", false
	}
	return *o.Value.Version, o.Value.Digest, true
}

// unknownOutcome says whether an update may or may not have taken
// effect: answered info, or still open when the history ends.
func unknownOutcome(o lockview.Op) bool { return o.Type == history.Info || o.Type == "" }

// evidence keeps violations up to the input's limit, with an exact count
// and the time of the first.
type evidence[T any] struct {
	list    []T
	count   int
	omitted int
	first   *int64
}

func (e *evidence[T]) add(limit int, v T, at int64) {
	e.count++
	e.first = checker.Earliest(e.first, at)
	if len(e.list) < limit {
		e.list = append(e.list, v)
		return
	}
	e.omitted++
}

func (e *evidence[T]) violations() []T {
	if e.list == nil {
		return []T{}
	}
	return e.list
}
