package linear

import (
	"context"
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/zkchaos/zkchaos/history"
)

// The mutex model.
//
// What is checked: the acquires, releases and losses of one lock key must
// be linearizable against an owner-aware mutex whose state is the holder
// (a logical process) or free:
//
//   - acquire ok: legal only when free; the caller becomes the holder (a
//     second acquire while held, by anyone, is illegal);
//   - release ok: legal only by the holder; frees the lock;
//   - release fail ("revoked", "not held"): the caller learns it no longer
//     holds; if it was the holder the lock is free, otherwise no effect;
//   - lost (the recipe noticing it lost the lock, an instant event): the
//     same as a failed release: it ends the caller's hold if it had one;
//   - info acquire or release: applied where legal, otherwise no effect
//     (exact for the same reason as the register model's info rule);
//   - failed acquires never held anything and are left out (annotated).
//
// A lease-based lock cannot pass this under SIGSTOP of a holder: ZooKeeper
// expires the paused holder's session and grants the lock to another
// client while the paused one still believes it holds it (it learns only
// on waking up, with a lost event or a failed release). That is the reason
// fencing exists, so this checker reports it truthfully and does not gate
// by default.

type mutexOp uint8

const (
	mAcquire mutexOp = iota
	mRelease
	mLost
)

func (o mutexOp) String() string {
	switch o {
	case mAcquire:
		return "acquire"
	case mRelease:
		return "release"
	}
	return "lost"
}

type mutexIn struct {
	Op   mutexOp
	Proc int
	// Implicit marks the release a retired holder makes at an unknown time
	// (see splitHistory).
	Implicit bool
}

type mutexOut struct{ Status opStatus }

// free is the state of a lock nobody holds.
const free = -1

func mutexStep(holder int, in mutexIn, out mutexOut) (bool, int) {
	switch in.Op {
	case mAcquire:
		switch out.Status {
		case stOK:
			return holder == free, in.Proc
		case stInfo:
			if holder == free {
				return true, in.Proc
			}
			return true, holder
		}
		return false, holder
	case mRelease:
		if out.Status == stOK {
			return holder == in.Proc, free
		}
	}
	// Failed or unknown releases, and losses: end the caller's hold if it
	// has one.
	if holder == in.Proc {
		return true, free
	}
	return true, holder
}

// mutexModel is the model for one segment, starting with start holding
// (free: nobody); ctx is handled as in regModel.porcupine. procs names the
// logical processes in descriptions.
func mutexModel(ctx context.Context, procs map[int]history.Process, start int) porcupine.Model {
	name := func(p int) string {
		if hp, ok := procs[p]; ok {
			return "p" + hp.String()
		}
		return fmt.Sprintf("logical process %d", p)
	}
	md := porcupine.Model{
		Init: func() any { return start },
		Step: func(s, in, out any) (bool, any) {
			return mutexStep(s.(int), in.(mutexIn), out.(mutexOut))
		},
		Hash: func(s any) uint64 { return mix(uint64(s.(int))) },
		DescribeOperation: func(in, out any) string {
			i, o := in.(mutexIn), out.(mutexOut)
			s := fmt.Sprintf("%s %s", i.Op, name(i.Proc))
			if i.Implicit {
				s = fmt.Sprintf("implicit release %s (retired)", name(i.Proc))
			}
			switch o.Status {
			case stInfo:
				return s + " → ?"
			case stOK:
				return s + " → ok"
			}
			return s + " → fail"
		},
		DescribeOperationMetadata: describeMeta,
		DescribeState: func(s any) string {
			if s.(int) == free {
				return "free"
			}
			return "held by " + name(s.(int))
		},
	}
	if ctx != nil {
		md.StepContext = func(pctx context.Context, s, in, out any) (bool, any) {
			if ctx.Err() != nil || pctx.Err() != nil {
				return false, s
			}
			return mutexStep(s.(int), in.(mutexIn), out.(mutexOut))
		}
	}
	return md
}
