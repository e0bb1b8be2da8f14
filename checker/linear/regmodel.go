package linear

import (
	"context"
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/zkchaos/zkchaos/resource/register"
)

// The register model.
//
// What is checked: the client-observed reads and writes of one key must be
// linearizable against a sequential specification of the fenced register
// *as the lock's user relies on it*. The state is the register's own
// (value, token of the last accepted write, fence). An operation is
// accepted or rejected exactly by register.Decide, the register's own
// rule, for the run's mode (off: everything; on: token >= fence; strict:
// also, for a write, token > last write's token), and an accepted tokened
// read or write raises the fence (not tracked in mode off, where nothing
// reads it). On
// top of the register's rule, an accepted write must keep the two
// promises the lock exists for:
//
//  1. token order: it does not carry a lower token than the last accepted
//     write (a stale holder's write landing after a newer holder's);
//  2. no lost update: the register still holds the value this grant last
//     observed (its own read, or its own previous write), i.e. nothing was
//     written between the grant's read and its write. The lock workload's
//     write is "read N, write N+1 under one grant", so this is the
//     counter's invariant.
//
// With fencing on or strict, the register's rule implies both promises for
// this workload (a fenced read raises the fence, so any other write between
// a grant's read and its write would have needed a newer grant's read,
// which fences the older grant off): a correct fenced run is linearizable.
// With fencing off the model is a plain register plus the promises, so a
// stale write accepted after a newer one is a step the model refuses, and
// porcupine must explain every later observation without it.
//
// Why the promises are needed: in the runs that matter the stale write is
// an info operation (the paused worker's write timed out), which may
// linearize anywhere after its invocation, so against a plain register it
// can always be placed just before the read that saw it. With the promises
// it can only take effect where the value still is what its grant read;
// once a newer grant has written, that place is gone, and the later reads
// that return its value (or the register's token of the last accepted
// write, which read replies carry in current_token) cannot be explained.
//
// Unknown (info) operations: the model applies an info operation's effect
// iff the register would have accepted it and it keeps the promises, and
// otherwise treats it as having no effect. Since an info operation returns
// at infinity, "it never happened" is always available to porcupine by
// linearizing it last, where its effect is unobservable; so this
// deterministic rule admits exactly the histories the nondeterministic
// "happened or not" model admits, without a power-set construction.
//
// What is not checked: a stale write that no later operation observes
// (the last write of a run) is invisible to clients; the exact
// double-writer checker sees it in the apply log.

// regIn is a register operation's input.
type regIn struct {
	Write bool
	// N is the value written (writes).
	N int64
	// Token is the grant token presented; register.NoToken when the history
	// does not say (then no token rule applies to the operation).
	Token int64
	// Base is the value the writing grant last observed (promise 2).
	Base    int64
	HasBase bool
}

// regOut is a register operation's outcome.
type regOut struct {
	Status opStatus
	// N is the value read (ok reads).
	N int64
	// WTok is the register's token of the last accepted write, as the read
	// reply carried it (current_token), when known.
	WTok    int64
	HasWTok bool
}

// regState is the state of one key. It is a comparable value, so
// porcupine's == fallback and the Hash below agree.
type regState struct {
	Value int64
	Token int64
	Fence int64
}

type regModel struct{ mode string }

func (m regModel) init() regState {
	return regState{Value: 0, Token: register.NoToken, Fence: register.NoToken}
}

// accepts is the register's own rule (register.Decide): a request without
// a token (or whose token the history lacks) is let in.
func (m regModel) accepts(s regState, in regIn) bool {
	op := register.OpRead
	if in.Write {
		op = register.OpWrite
	}
	ok, _ := register.Decide(m.mode, op, register.KeyState{Value: s.Value, Token: s.Token, Fence: s.Fence},
		in.Token != register.NoToken, in.Token)
	return ok
}

// promises are the lock's two promises for an accepted write.
func (m regModel) promises(s regState, in regIn) bool {
	if in.Token != register.NoToken && s.Token != register.NoToken && in.Token < s.Token {
		return false
	}
	return !in.HasBase || s.Value == in.Base
}

func (m regModel) apply(s regState, in regIn) regState {
	if m.mode != register.ModeOff && in.Token > s.Fence {
		s.Fence = in.Token
	}
	if in.Write {
		s.Value, s.Token = in.N, in.Token
	}
	return s
}

func (m regModel) step(s regState, in regIn, out regOut) (bool, regState) {
	acc := m.accepts(s, in)
	switch out.Status {
	case stInfo:
		if !acc || (in.Write && !m.promises(s, in)) {
			return true, s
		}
		return true, m.apply(s, in)
	case stRejected:
		// A rejection with a token the history lacks cannot be judged.
		return !acc || in.Token == register.NoToken, s
	case stOK:
	default:
		return false, s
	}
	if !acc {
		return false, s
	}
	if in.Write {
		if !m.promises(s, in) {
			return false, s
		}
		return true, m.apply(s, in)
	}
	if out.N != s.Value || (out.HasWTok && out.WTok != s.Token) {
		return false, s
	}
	return true, m.apply(s, in)
}

// porcupine returns the model for one segment, starting in start. ctx, when not nil, is
// watched by every step: once it ends, every step fails, which collapses
// porcupine's search in linear time; the caller must then discard the
// answer (see checkPartition). Visualisation needs a model without ctx,
// because porcupine replays steps there and panics if one fails.
func (m regModel) porcupine(ctx context.Context, start regState) porcupine.Model {
	md := porcupine.Model{
		Init: func() any { return start },
		Step: func(s, in, out any) (bool, any) {
			return m.step(s.(regState), in.(regIn), out.(regOut))
		},
		Hash: func(s any) uint64 {
			st := s.(regState)
			return mix(uint64(st.Value), uint64(st.Token), uint64(st.Fence))
		},
		DescribeOperation:         func(in, out any) string { return describeReg(in.(regIn), out.(regOut)) },
		DescribeOperationMetadata: describeMeta,
		DescribeState: func(s any) string {
			st := s.(regState)
			if m.mode == register.ModeOff {
				return fmt.Sprintf("value %d, token %d", st.Value, st.Token)
			}
			return fmt.Sprintf("value %d, token %d, fence %d", st.Value, st.Token, st.Fence)
		},
	}
	if ctx != nil {
		md.StepContext = func(pctx context.Context, s, in, out any) (bool, any) {
			if ctx.Err() != nil || pctx.Err() != nil {
				return false, s
			}
			return m.step(s.(regState), in.(regIn), out.(regOut))
		}
	}
	return md
}

func describeReg(in regIn, out regOut) string {
	tok := "?"
	if in.Token != register.NoToken {
		tok = fmt.Sprint(in.Token)
	}
	var s string
	if in.Write {
		s = fmt.Sprintf("write(%d, t%s)", in.N, tok)
		if in.HasBase {
			s += fmt.Sprintf(" on %d", in.Base)
		}
	} else {
		s = fmt.Sprintf("read(t%s)", tok)
	}
	switch out.Status {
	case stInfo:
		return s + " → ?"
	case stRejected:
		return s + " → rejected"
	}
	if in.Write {
		return s + " → ok"
	}
	if out.HasWTok {
		return s + fmt.Sprintf(" → %d (t%d)", out.N, out.WTok)
	}
	return s + fmt.Sprintf(" → %d", out.N)
}

// mix combines state fields into porcupine's cache hash; equal states
// hash equally because it is a pure function of the fields.
func mix(xs ...uint64) uint64 {
	h := uint64(14695981039346656037)
	for _, x := range xs {
		h ^= x
		h *= 0x9E3779B97F4A7C15
		h ^= h >> 29
	}
	return h
}
