package lock

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/checker/stream"
	"github.com/zkchaos/zkchaos/history"
)

// NameTokenOrder is the token-order checker.
const NameTokenOrder = "token-order"

// TokenRegression is two successive grants of one key whose tokens do not
// increase.
type TokenRegression struct {
	Key       string   `json:"key"`
	Tokens    [2]int64 `json:"tokens"`
	Processes [2]int   `json:"processes"`
	// TimesNS are the completion times of the two acquires (run clock).
	TimesNS [2]int64 `json:"times_ns"`
}

// TokenOrderDetails is the evidence of the token-order checker.
type TokenOrderDetails struct {
	Grants             int               `json:"grants"`
	Regressions        []TokenRegression `json:"regressions"`
	RegressionCount    int               `json:"regression_count"`
	RegressionsOmitted int               `json:"regressions_omitted,omitempty"`
	// FirstViolationTimeNS is when (run clock) the first violation
	// happened, the figure test-all reports as time to first violation.
	FirstViolationTimeNS *int64 `json:"first_violation_time_ns,omitempty"`
}

// CheckTokenOrder checks the one property a fencing token must have: a
// later grant of a lock has a higher token than every earlier grant, so
// that the resource can tell the current holder from a stale one. A
// token that only identifies a grant (random, a UUID) or repeats (a
// coarse clock) fails here whether or not the run was fenced.
// Grants are ordered by their acquire's ok, which for any two grants of a
// working lock comes in grant order: the second cannot be granted before
// the first's node is gone, which is after the first's ok was sent.
//
// It is a TokenOrderStream fed the whole history (one implementation of
// the rule).
func CheckTokenOrder(ctx context.Context, in checker.Input) checker.Result {
	s := NewTokenOrderStream(in.Limit(), !lockview.Monotone(in.History))
	if err := lockview.Feed(ctx, in.History, s.Add); err != nil {
		return checker.Cancelled(ctx)
	}
	s.Finish()
	d := s.Result()
	if d.RegressionCount > 0 {
		r := d.Regressions[0]
		return checker.Result{Valid: checker.Invalid, Details: d, Error: fmt.Sprintf("%d grants did not raise the token, first on %s: %d then %d",
			d.RegressionCount, r.Key, r.Tokens[0], r.Tokens[1])}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}

// TokenOrderStream is the token-order rule fed the history one paired
// event at a time (lockview.Pairer): per key, each grant's token against
// the previous grant's. Grants are compared in the order of their
// acquire's ok time, ties by invocation: the grants of one instant wait
// until the history's clock passes it (in deferred mode, for a history
// whose clock goes back, until Finish). Memory per key: the last grant,
// the grants of the current instant, and the first limit regressions.
type TokenOrderStream struct {
	limit    int
	deferred bool
	d        TokenOrderDetails
	keys     map[string]*tokenKey
	waiting  []*tokenKey // keys with grants waiting for the clock
	now      int64
}

type tokenGrant struct {
	t, rank int64
	p       history.Process
	tok     int64
}

type tokenKey struct {
	key     string
	last    *tokenGrant
	waiting []tokenGrant
	found   []TokenRegression // the first limit of the key
}

var _ stream.Checker[*lockview.Item, stream.Found] = (*TokenOrderStream)(nil)

// NewTokenOrderStream keeps the first limit regressions as evidence;
// deferred compares only at Finish.
func NewTokenOrderStream(limit int, deferred bool) *TokenOrderStream {
	return &TokenOrderStream{limit: limit, deferred: deferred, keys: map[string]*tokenKey{},
		d: TokenOrderDetails{Regressions: []TokenRegression{}}}
}

// Name implements stream.Checker.
func (s *TokenOrderStream) Name() string { return NameTokenOrder }

// Add implements stream.Checker: the regressions found once the clock
// passed their grant.
func (s *TokenOrderStream) Add(it *lockview.Item) []stream.Found {
	var found []stream.Found
	if it.Event.Time < s.now {
		s.deferred = true // a clock that goes back: compare at Finish
	}
	if t := it.Event.Time; t > s.now {
		s.now = t
		if !s.deferred && len(s.waiting) > 0 {
			found = s.flush(t)
		}
	}
	o := it.Op
	if it.Kind != lockview.ItemDone || o.F != history.FAcquire || o.Type != history.OK {
		return found
	}
	tok, ok := o.Token()
	if !ok {
		return found
	}
	s.d.Grants++
	k := s.keys[o.Key]
	if k == nil {
		k = &tokenKey{key: o.Key}
		s.keys[o.Key] = k
	}
	if len(k.waiting) == 0 {
		s.waiting = append(s.waiting, k)
	}
	k.waiting = append(k.waiting, tokenGrant{o.Done, it.Rank, o.Process, tok})
	return found
}

// flush compares the waiting grants done before now (all of them: math.MaxInt64).
func (s *TokenOrderStream) flush(now int64) []stream.Found {
	var found []stream.Found
	left := 0
	for _, k := range s.waiting {
		slices.SortStableFunc(k.waiting, func(a, b tokenGrant) int {
			if a.t != b.t {
				return cmp.Compare(a.t, b.t)
			}
			return cmp.Compare(a.rank, b.rank)
		})
		n := 0
		for ; n < len(k.waiting) && k.waiting[n].t < now; n++ {
			if f, ok := s.compare(k.key, k, k.waiting[n]); ok {
				found = append(found, f)
			}
		}
		k.waiting = append(k.waiting[:0], k.waiting[n:]...)
		if len(k.waiting) > 0 {
			s.waiting[left] = k
			left++
		}
	}
	clear(s.waiting[left:])
	s.waiting = s.waiting[:left]
	return found
}

func (s *TokenOrderStream) compare(key string, k *tokenKey, b tokenGrant) (stream.Found, bool) {
	a := k.last
	k.last = &b
	if a == nil || b.tok > a.tok {
		return stream.Found{}, false
	}
	s.d.RegressionCount++
	r := TokenRegression{Key: key, Tokens: [2]int64{a.tok, b.tok},
		Processes: [2]int{int(a.p), int(b.p)}, TimesNS: [2]int64{a.t, b.t}}
	if len(k.found) < s.limit {
		k.found = append(k.found, r)
	}
	return stream.Found{Key: key, TimeNS: b.t, Message: fmt.Sprintf("%s granted to process %d with token %d after process %d's token %d",
		key, b.p, b.tok, a.p, a.tok)}, true
}

// Finish compares every grant still waiting: the history is over.
func (s *TokenOrderStream) Finish() []stream.Found { return s.flush(math.MaxInt64) }

// Result is the evidence so far, listed as the batch lists it: keys in
// order, the first limit regressions in all.
func (s *TokenOrderStream) Result() TokenOrderDetails {
	d := s.d
	d.Regressions = []TokenRegression{}
	for _, key := range slices.Sorted(maps.Keys(s.keys)) {
		for _, r := range s.keys[key].found {
			if len(d.Regressions) < s.limit {
				d.Regressions = append(d.Regressions, r)
			}
		}
	}
	d.RegressionsOmitted = d.RegressionCount - len(d.Regressions)
	for _, g := range d.Regressions {
		d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, g.TimesNS[1])
	}
	return d
}
