package linear

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
)

// Segmented checking.
//
// Each key's operations are cut into segments that porcupine checks one at
// a time, each from the model state the previous segment ended in, so that
// only the segment still open has to be kept (a soak's memory stays
// bounded) and a violation is found as soon as its segment closes.
//
// The rule: a key's history is cut at time t when
//
//  1. no operation of the key is open at t: every operation the segment
//     holds returned before t (strictly: porcupine orders a call before a
//     return of the same instant, so equal times are concurrent), and
//     every later operation is invoked after t. Open are: invocations
//     without their completion; info operations, which return at
//     infinity until a late answer or the apply log resolves them
//     (resolve.go); for the mutex, retired holders, whose implicit
//     release is due at the end;
//  2. the state the segment ends in is determined: it is the same in
//     every legal linearization of the segment from its start state, and
//     computed from the segment's operations without a search
//     (regSum.end, mutSum.end).
//
// Soundness: let segments S1..Sn be cut so, σ0 the model's initial state
// and σk the end state computed for Sk from σk-1. The history is
// linearizable from σ0 iff every Sk is linearizable from σk-1.
// (⇐) Concatenating the segments' linearizations respects real time:
// every operation of Sk returned before the cut and every one of Sk+1 was
// invoked after it, so none of Sk+1 precedes one of Sk; within a segment
// the order is porcupine's. Each segment starts where the previous one
// ended, because its end state is σk in every legal linearization. (⇒) In
// any linearization of the whole, real time puts every operation of Sk
// before every one of Sk+1, so its restriction to Sk is a linearization
// of Sk, from the state the earlier segments leave, which is σk-1 by
// induction. Hence the segmented answer is the whole check's: a key is
// false iff some segment is (a segment found false was checked from the
// state every legal prefix leaves, or the prefix is itself illegal:
// either way the key is not linearizable), true iff every segment is, and
// unknown otherwise (a segment over budget, a key given up). A segment is
// checked only with the start state computed for it, so segments of a key
// can be checked in any order, in parallel.
//
// What blocks a cut: an operation that never completes (info, or the run
// ended first) is open to the end, so a key has one more segment after
// its last cut: from before that operation to the end. Such a key, and
// one given up because its open segment outgrew the bound, is named in
// the evidence (uncut_keys). Under contention a mutex key always has a
// waiting acquire open, so the mutex is rarely cut; the register, whose
// reads and writes are made under the lock, is cut between grants.

// DefaultMaxSegmentOps bounds a streaming key's open segment: a key that
// finds no cut within this many operations is given up (unknown), so
// that one uncuttable key cannot take a soak's memory.
const DefaultMaxSegmentOps = 200_000

// A key is cut only once its open segment holds minCutOps operations or
// spans minCutSpan of run time: any cut point may be skipped (the union of
// two segments is a segment whose end state the summary still follows),
// and one porcupine call per operation would cost more than it saves,
// while a second keeps a violation's report prompt. Variables so that the
// tests can cut at every point.
var (
	minCutOps  = 64
	minCutSpan = int64(time.Second)
)

// modelOf is the checker whose model an operation belongs to.
func modelOf(f string) string {
	switch f {
	case history.FAcquire, history.FRelease, history.FLost:
		return NameMutex
	case history.FRead, history.FWrite, history.FFinalRead:
		return NameRegister
	}
	return ""
}

// summary follows a segment's operations as they are added, so that its
// end state is known without a search.
type summary interface {
	observe(op porcupine.Operation)
	// end is the state the segment ends in from start, and false when
	// it is not determined (then the segment is not cut there).
	end(start any) (any, bool)
}

// segModel is one model, as the segmenter needs it.
type segModel interface {
	initial() any
	summary() summary
	// from is porcupine's model starting in start; ctx as in
	// regModel.porcupine.
	from(ctx context.Context, start any) porcupine.Model
}

// segment is a closed segment: its operations and the state it starts in.
type segment struct {
	key   string
	index int
	p     *partition
	start any
	// t is the key's track, so that a pool worker need not look it up
	// in the map the producer writes.
	t *keyTrack
}

// keyTrack is the segmenter's state of one key.
type keyTrack struct {
	g     *segmenter
	key   string
	open  int
	seg   *partition
	sum   summary
	start any
	// maxRet is the latest return of the open segment; infCall the
	// earliest invocation of its operations returning at infinity.
	maxRet, infCall int64
	// cut is the time of the last cut (the closed segments' latest
	// return), hasCut whether there was one.
	cut      int64
	hasCut   bool
	segments int
	res      keyResult
	// chk is guarded by the Stream's mu.
	chk checked
}

func (t *keyTrack) newSegment() {
	t.seg = &partition{key: t.key, clients: map[int]int{}, track: t}
	t.sum = t.g.m.summary()
	t.maxRet, t.infCall = math.MinInt64, Infinity
}

// observe is told of every operation added to the key's open segment.
func (t *keyTrack) observe(op porcupine.Operation) {
	if t.res.givenUp != "" {
		t.seg.ops = t.seg.ops[:0]
		return
	}
	if t.hasCut && op.Call <= t.cut && t.res.err == "" {
		// Only a history whose times go backwards does this: the cut
		// was not one, and nothing this key says can be trusted.
		t.res.err = fmt.Sprintf("operation invoked at %s, before the cut at %s: the history's times go backwards",
			checker.Seconds(op.Call), checker.Seconds(t.cut))
	}
	t.maxRet = max(t.maxRet, op.Return)
	if op.Return == Infinity {
		t.infCall = min(t.infCall, op.Call)
	}
	t.sum.observe(op)
	t.g.touched[t] = true
	if t.g.maxOps > 0 && len(t.seg.ops) > t.g.maxOps {
		t.giveUp()
	}
}

// giveUp drops a key whose open segment outgrew the bound: its verdict is
// unknown, and its operations are not kept any more.
func (t *keyTrack) giveUp() {
	t.res.givenUp = fmt.Sprintf("no cut within %d operations from %s: given up (unknown) to bound memory",
		t.g.maxOps, checker.Seconds(t.seg.from))
	t.res.operations += len(t.seg.ops)
	t.res.largest = max(t.res.largest, len(t.seg.ops))
	t.seg.ops, t.seg.notes = nil, nil
}

// segmenter owns the open segment of every key of one model, cuts them
// by the rule above and hands each closed segment to closed.
type segmenter struct {
	h     *linHistory
	model string
	m     segModel
	// cuts false keeps one segment per key: the whole-history check.
	cuts   bool
	maxOps int
	keys   map[string]*keyTrack
	// touched are the keys whose open segment changed since the last
	// look: the candidates for a cut.
	touched map[*keyTrack]bool
	now     int64
	discard *partition
	closed  func(*segment)
}

func newSegmenter(model string, m segModel, cuts bool, maxOps int, closed func(*segment)) *segmenter {
	return &segmenter{model: model, m: m, cuts: cuts, maxOps: maxOps, keys: map[string]*keyTrack{},
		touched: map[*keyTrack]bool{}, discard: &partition{clients: map[int]int{}}, closed: closed}
}

func (g *segmenter) track(key string) *keyTrack {
	t := g.keys[key]
	if t == nil {
		t = &keyTrack{g: g, key: key, start: g.m.initial()}
		t.newSegment()
		g.keys[key] = t
	}
	return t
}

// part is the open segment an operation f of key goes to; the other
// model's operations go nowhere.
func (g *segmenter) part(f, key string) *partition {
	if modelOf(f) != g.model {
		return g.discard
	}
	return g.track(key).seg
}

// opened counts an operation f of key as open (d = 1) or no longer (-1).
func (g *segmenter) opened(f, key string, d int) {
	if modelOf(f) != g.model {
		return
	}
	t := g.track(key)
	t.open += d
	g.touched[t] = true
}

// advance moves the clock to an event's time and cuts every touched key
// that can be cut.
func (g *segmenter) advance(now int64) {
	g.now = max(g.now, now)
	for t := range g.touched {
		if t.open == 0 && t.maxRet >= g.now && len(t.seg.ops) > 0 {
			continue // look again once time has passed its last return
		}
		if !g.tryCut(t) {
			delete(g.touched, t)
		}
	}
}

// tryCut cuts t if it may; true means "not yet, look again": only the
// segment's youth stood in the way.
func (g *segmenter) tryCut(t *keyTrack) (again bool) {
	if !g.cuts || t.open > 0 || t.res.givenUp != "" {
		return false
	}
	if len(t.seg.ops) == 0 {
		t.seg.notes = nil // excluded operations only: nothing to draw them on
		return false
	}
	end, ok := t.sum.end(t.start)
	if !ok {
		return false
	}
	if len(t.seg.ops) < minCutOps && g.now-t.seg.from < minCutSpan {
		return true
	}
	g.close(t, end)
	return false
}

// close hands the open segment over and opens the next from end.
func (g *segmenter) close(t *keyTrack, end any) {
	sortOps(t.seg)
	s := &segment{key: t.key, index: t.segments, p: t.seg, start: t.start, t: t}
	t.segments++
	t.res.largest = max(t.res.largest, len(t.seg.ops))
	t.cut, t.hasCut = t.maxRet, true
	t.start = end
	t.newSegment()
	g.closed(s)
}

// finish closes every key's last segment, as the end of the run leaves
// it, and says why a key could not be cut.
func (g *segmenter) finish() {
	for _, t := range g.keys {
		if t.res.givenUp != "" || len(t.seg.ops) == 0 {
			continue
		}
		if t.infCall != Infinity {
			if t.segments == 0 {
				t.res.uncut = fmt.Sprintf("one segment: an operation invoked at %s was open to the end (info, or never completed)",
					checker.Seconds(t.infCall))
			} else {
				t.res.uncut = fmt.Sprintf("not cut after %s: an operation invoked then was open to the end (info, or never completed)",
					checker.Seconds(t.infCall))
			}
		}
		g.close(t, nil)
	}
}
