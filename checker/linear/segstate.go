package linear

import (
	"context"
	"math"

	"github.com/anishathalye/porcupine"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// The end state of a segment, without a search (segment.go, rule 2).
//
// Register: the fence is the start's raised to the highest token of the
// segment's ok tokened operations (every ok operation was accepted, and
// an accepted one raises the fence to its token; max does not care about
// order; mode off tracks no fence); rejected operations change nothing.
// The value and the token of the last write are
//   - the start's, if the segment has no ok write;
//   - those of W, if W is the only maximal ok write: no other ok write
//     was invoked after W returned, so every other precedes W in real
//     time and W is the last write of every linearization;
//   - else those an ok read R reports (value, and the register's token
//     in current_token), if every ok write returned before R was invoked:
//     every linearization places every write before R, and R must see
//     the state they leave;
//   - else not determined: the segment is not cut there.
//
// Mutex: the holder at the end is the process whose last operation in the
// segment is an ok acquire (only a process's own release or loss ends its
// hold, and an ok acquire needs the lock free, so in a legal
// linearization a process whose last operation is an ok acquire holds,
// and one whose last operation is anything else does not); if there is
// none, the start's holder if it has no operation in the segment, else
// free. A process's "last" operation must be clear: two of its operations
// that overlap in time (an instant loss inside a waiting acquire) leave
// the state undetermined. Two holders at the end cannot come from a legal
// linearization; porcupine then finds the segment false.
//
// An operation returning at infinity (an unresolved info operation) is
// open, so no segment is cut with one; it is still refused here.

type regSeg struct{ m regModel }

func (r regSeg) initial() any { return r.m.init() }
func (r regSeg) summary() summary {
	return &regSum{mode: r.m.mode, fence: register.NoToken, maxWriteRet: math.MinInt64}
}
func (r regSeg) from(ctx context.Context, start any) porcupine.Model {
	return r.m.porcupine(ctx, start.(regState))
}

type regSum struct {
	mode  string
	info  bool
	fence int64
	// writes are the maximal ok writes: those no other ok write follows
	// in real time (at most as many as writes open at once).
	writes      []porcupine.Operation
	anyWrite    bool
	maxWriteRet int64
	// fix is the ok read with the register's token invoked last.
	fix *porcupine.Operation
}

func (r *regSum) observe(op porcupine.Operation) {
	in, out := op.Input.(regIn), op.Output.(regOut)
	switch out.Status {
	case stInfo:
		r.info = true
		return
	case stOK:
	default:
		return
	}
	if in.Token != register.NoToken {
		r.fence = max(r.fence, in.Token)
	}
	if !in.Write {
		if out.HasWTok && (r.fix == nil || op.Call > r.fix.Call) {
			r.fix = &op
		}
		return
	}
	r.anyWrite = true
	r.maxWriteRet = max(r.maxWriteRet, op.Return)
	for _, w := range r.writes {
		if w.Call > op.Return {
			return // a kept write follows it
		}
	}
	keep := r.writes[:0]
	for _, w := range r.writes {
		if op.Call <= w.Return {
			keep = append(keep, w)
		}
	}
	r.writes = append(keep, op)
}

func (r *regSum) end(start any) (any, bool) {
	s := start.(regState)
	if r.info {
		return s, false
	}
	if r.mode != register.ModeOff && r.fence > s.Fence {
		s.Fence = r.fence
	}
	switch {
	case !r.anyWrite:
		return s, true
	case len(r.writes) == 1:
		w := r.writes[0].Input.(regIn)
		s.Value, s.Token = w.N, w.Token
		return s, true
	case r.fix != nil && r.fix.Call > r.maxWriteRet:
		o := r.fix.Output.(regOut)
		s.Value, s.Token = o.N, o.WTok
		return s, true
	}
	return s, false
}

type mutexSeg struct{ procs map[int]history.Process }

func (mutexSeg) initial() any     { return free }
func (mutexSeg) summary() summary { return &mutSum{last: map[int]procLast{}} }
func (m mutexSeg) from(ctx context.Context, start any) porcupine.Model {
	return mutexModel(ctx, m.procs, start.(int))
}

type procLast struct {
	call, ret int64
	holds     bool
}

type mutSum struct {
	info, ambiguous bool
	last            map[int]procLast
}

func (m *mutSum) observe(op porcupine.Operation) {
	in, out := op.Input.(mutexIn), op.Output.(mutexOut)
	if out.Status == stInfo {
		m.info = true
		return
	}
	cur := procLast{call: op.Call, ret: op.Return, holds: in.Op == mAcquire && out.Status == stOK}
	l, seen := m.last[in.Proc]
	switch {
	case !seen || cur.call > l.ret:
		m.last[in.Proc] = cur
	case cur.ret < l.call:
		// an earlier operation, completed late
	default:
		m.ambiguous = true
	}
}

func (m *mutSum) end(start any) (any, bool) {
	if m.info || m.ambiguous {
		return start, false
	}
	holder, n := free, 0
	for p, l := range m.last {
		if l.holds {
			holder, n = p, n+1
		}
	}
	if n > 1 {
		return free, true // illegal: porcupine says so
	}
	if n == 0 {
		if _, has := m.last[start.(int)]; !has {
			holder = start.(int)
		}
	}
	return holder, true
}
