// Package checktest builds histories and apply logs for the tests of the
// checker packages: by hand, event by event, or simulated (GenLockHistory).
// It is imported by tests only.
package checktest

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// GenSpec describes a simulated lock run: keys, workers contending per
// key, and how often an operation's outcome is lost (info).
type GenSpec struct {
	Seed          uint64
	Events        int // approximate history length
	Keys          int
	WorkersPerKey int
	InfoShare     float64 // chance that a read or write completes as info
	Mode          string  // the register's fencing mode
	// StaleShare is the chance that a holder is paused in its write: its
	// write completes as info, the next holder takes the lock, reads and
	// writes, and only then the stale write reaches the register (and is
	// reported late). With fencing the register refuses it; without, it
	// is a double write that the register checker must find.
	StaleShare float64
	// ReuseFirstToken makes every process write with the token of its
	// first grant (a recipe bug the lock itself does not show): its later
	// writes are rejected by a fenced register, though it holds the lock.
	ReuseFirstToken bool
}

type staleWrite struct {
	p      int
	tok, n int64
}

// GenLockHistory simulates a correct system: a correct mutex per key
// (a retired holder's lock is freed, at an unrecorded time, before the
// next grant), a register that applies the mode's rule, and the lock
// workload (acquire, read N, write N+1, release) with waiting acquirers
// keeping WorkersPerKey operations open per key. An info write took effect
// or not at random. It returns the history and the matching apply log; a
// correct checker must call both valid.
func GenLockHistory(s GenSpec) ([]history.Event, []register.Entry) {
	r := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	type kstate struct {
		t               int64
		val, tok, fence int64
		procs           []int  // the logical processes of the key's slots
		waiting         []bool // whether the slot's acquire is open
		stale           *staleWrite
	}
	var evs []history.Event
	var log []register.Entry
	nextProc := 0
	keys := make([]*kstate, s.Keys)
	for i := range keys {
		k := &kstate{t: int64(i), tok: register.NoToken, fence: register.NoToken}
		for range s.WorkersPerKey {
			k.procs = append(k.procs, nextProc)
			k.waiting = append(k.waiting, false)
			nextProc++
		}
		keys[i] = k
	}
	tokBase := int64(1000)
	firstTok := map[int]int64{}
	add := func(k *kstate, p int, typ history.Type, f, key string, v *history.Value, errText string) {
		k.t += 1 + r.Int64N(1000)
		evs = append(evs, history.Event{Time: k.t, Process: history.Process(p), Type: typ, F: f, Key: key, Value: v, Error: errText})
	}
	apply := func(k *kstate, key, op string, p int, tok, val int64) (bool, int64) {
		st := register.KeyState{Value: k.val, Token: k.tok, Fence: k.fence}
		ok, _ := register.Decide(s.Mode, op, st, true, tok)
		if op == register.OpRead {
			val = k.val
		}
		log = append(log, register.Entry{Op: op, Key: key, Token: tok, HasToken: true, Value: val,
			Process: p, Accepted: ok, Mode: s.Mode, PrevValue: k.val, PrevToken: k.tok, PrevFence: k.fence})
		if ok {
			k.fence = max(k.fence, tok)
			if op == register.OpWrite {
				k.val, k.tok = val, tok
			}
		}
		return ok, k.fence
	}
	for len(evs) < s.Events {
		ki := r.IntN(s.Keys)
		k := keys[ki]
		key := fmt.Sprintf("SKU-%d", ki+1)
		// The slots waiting for the lock have their acquires open; the
		// winner's acquire completes, the others stay invoked.
		slot := r.IntN(len(k.procs))
		p := k.procs[slot]
		for i, q := range k.procs {
			if !k.waiting[i] {
				add(k, q, history.Invoke, history.FAcquire, key, nil, "")
				k.waiting[i] = true
			}
		}
		k.waiting[slot] = false
		retire := func() {
			k.procs[slot] = nextProc
			nextProc++
		}
		tokBase++
		tok := tokBase
		wtok := tok // the token the write presents
		if s.ReuseFirstToken {
			if f, ok := firstTok[p]; ok {
				wtok = f
			} else {
				firstTok[p] = tok
			}
		}
		add(k, p, history.OK, history.FAcquire, key, &history.Value{Token: history.Int64(tok)}, "")
		add(k, p, history.Invoke, history.FRead, key, nil, "")
		if r.Float64() < s.InfoShare/2 {
			if r.IntN(2) == 0 {
				apply(k, key, register.OpRead, p, tok, 0)
			}
			add(k, p, history.Info, history.FRead, key, nil, "timeout")
			retire()
			continue
		}
		apply(k, key, register.OpRead, p, tok, 0)
		n := k.val
		add(k, p, history.OK, history.FRead, key, &history.Value{Token: history.Int64(tok), N: history.Int64(n),
			Current: history.Int64(k.tok)}, "")
		if w := k.stale; w != nil {
			// The paused holder wakes up after the new holder's read.
			k.stale = nil
			ok, fence := apply(k, key, register.OpWrite, w.p, w.tok, w.n)
			v := &history.Value{Token: history.Int64(w.tok), N: history.Int64(w.n), Of: history.FWrite, State: string(history.OK)}
			if !ok {
				v.State, v.Current = string(history.Fail), history.Int64(fence)
			}
			add(k, w.p, history.Invoke, history.FLate, key, v, "")
			add(k, w.p, history.OK, history.FLate, key, v, "")
		}
		add(k, p, history.Invoke, history.FWrite, key, &history.Value{N: history.Int64(n + 1)}, "")
		if x := r.Float64(); x < s.InfoShare/2+s.StaleShare {
			if x < s.StaleShare {
				k.stale = &staleWrite{p: p, tok: tok, n: n + 1}
			} else if r.IntN(2) == 0 {
				apply(k, key, register.OpWrite, p, wtok, n+1)
			}
			add(k, p, history.Info, history.FWrite, key, nil, "timeout")
			retire()
			continue
		}
		if ok, fence := apply(k, key, register.OpWrite, p, wtok, n+1); ok {
			add(k, p, history.OK, history.FWrite, key, &history.Value{Token: history.Int64(wtok), N: history.Int64(n + 1)}, "")
		} else {
			add(k, p, history.Fail, history.FWrite, key, &history.Value{Token: history.Int64(wtok), N: history.Int64(n + 1),
				Current: history.Int64(fence)}, "rejected")
		}
		add(k, p, history.Invoke, history.FRelease, key, nil, "")
		add(k, p, history.OK, history.FRelease, key, &history.Value{Token: history.Int64(tok)}, "")
	}
	// Keys run on their own clocks; the history is in time order.
	slices.SortStableFunc(evs, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	for i := range evs {
		evs[i].Index = int64(i)
	}
	// The register's log is in commit order across keys; any order of
	// the keys is a correct interleaving.
	for i := range log {
		log[i].Seq = int64(i + 1)
	}
	return evs, log
}

// BenchInput is a realistic lock history for benchmarks: 10 keys,
// workersPerKey workers per key (the others waiting beside the holder),
// 2% of reads and writes info, fencing on.
func BenchInput(events, workersPerKey int) checker.Input {
	es, log := GenLockHistory(GenSpec{Seed: 7, Events: events, Keys: 10, WorkersPerKey: workersPerKey,
		InfoShare: 0.02, Mode: register.ModeOn})
	return checker.Input{History: es, ApplyLog: log, Fencing: register.ModeOn}
}
