package synth

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

const msNS = int64(1e6)

// earliest is the slot whose clock is earliest: it acts next, so a key's
// lock is requested, and granted, in time order.
func (g *gen) earliest() *slot {
	best := g.slots[0]
	for _, sl := range g.slots[1:] {
		if sl.at < best.at {
			best = sl
		}
	}
	return best
}

// step is one critical section of the earliest slot's process (or its
// failed acquire).
func (g *gen) step() {
	sl := g.earliest()
	k := g.rng.IntN(g.s.Keys)
	inv := sl.at
	g.acquires++
	grant := max(inv+2*msNS+g.jitter(8), g.keyFree[k]+msNS+g.jitter(4))
	var fail string
	switch {
	case g.s.FailEvery > 0 && g.acquires%g.s.FailEvery == 0:
		fail, grant = "connection loss", inv+msNS+g.jitter(4)
	case grant-inv > int64(g.s.AcquireTimeout):
		fail, grant = "timeout", inv+int64(g.s.AcquireTimeout)
	}
	if fail != "" {
		g.op(sl.proc, history.FAcquire, key(k), inv, grant, history.Fail, nil, nil, fail)
		sl.at = grant + int64(g.s.Think)
		return
	}
	g.token += 1 + g.rng.Int64N(30)
	tok := g.token
	node := fmt.Sprintf("/locks/inventory/%s/_c_%08x-lock-%010d", key(k), g.rng.Uint32(), g.keyNodes[k])
	g.keyNodes[k]++
	wakeups := int64(0)
	if g.keyFree[k] > inv {
		wakeups = 1
	}
	g.op(sl.proc, history.FAcquire, key(k), inv, grant, history.OK, nil,
		&history.Value{Token: history.Int64(tok), Node: node, Wakeups: history.Int64(wakeups)}, "")
	g.criticalSection(sl, k, tok, node, grant)
}

// criticalSection records a granted lock's read, write and release, or
// hands the holder to the nemesis when a fault is due during its write.
func (g *gen) criticalSection(sl *slot, k int, tok int64, node string, grant int64) {
	p, kn := sl.proc, key(k)
	rInv := grant + 50_000
	rDone := rInv + msNS + g.jitter(3)
	readOut := &history.Value{Token: history.Int64(tok)}
	g.op(p, history.FRead, kn, rInv, rDone, history.OK, nil, readOut, "")
	n := new(int64) // what the write writes: the value read, plus one
	writeIn := &history.Value{}
	g.calls = append(g.calls, call{at: rDone - msNS/2, op: register.OpRead, key: kn, token: tok, hasToken: true, process: p,
		fill: func(e register.Entry, _ register.KeyState) {
			readOut.N, readOut.Current = history.Int64(e.Value), history.Int64(e.PrevToken)
			*n = e.Value + 1
			writeIn.N = history.Int64(*n)
		}})
	wInv := rDone + 30_000
	if g.nextFault >= 0 && wInv+int64(g.s.Hold) > g.nextFault {
		g.pauseHolder(sl, k, tok, node, wInv, writeIn, n)
		return
	}
	wDone := wInv + int64(g.s.Hold) + msNS + g.jitter(4)
	writeOut := &history.Value{Token: history.Int64(tok)}
	g.op(p, history.FWrite, kn, wInv, wDone, history.OK, writeIn, writeOut, "")
	g.calls = append(g.calls, call{at: wDone - msNS/2, op: register.OpWrite, key: kn, token: tok, hasToken: true, process: p,
		value: func() int64 { return *n },
		fill:  func(e register.Entry, _ register.KeyState) { writeOut.N = history.Int64(e.Value) }})
	relInv := wDone + 50_000
	relDone := relInv + 5*msNS + g.jitter(10)
	g.op(p, history.FRelease, kn, relInv, relDone, history.OK, nil, &history.Value{Token: history.Int64(tok), Node: node}, "")
	g.keyFree[k] = relDone
	sl.at = relDone + int64(g.s.Think) + g.jitter(2)
	g.workloadEnd = max(g.workloadEnd, relDone)
}

// pauseHolder is a pause-holder fault on the process in sl, paused in
// its critical section before its write: the write times out (info) and
// the process retires; its session expires, so another process gets the
// key; on resume its write reaches the register late (a double write
// when fencing is off, refused when on), then it learns it expired.
func (g *gen) pauseHolder(sl *slot, k int, tok int64, node string, wInv int64, writeIn *history.Value, n *int64) {
	p, kn, sess := sl.proc, key(k), sl.session
	at := max(g.nextFault, wInv+msNS)
	target := fmt.Sprintf("process %d (pid %d) holding %s with token %d, in its critical section before its write", p, pid(p), kn, tok)
	paused := &history.Value{Session: sess, PID: pid(p), Target: target, TargetProcess: history.Int(p)}
	g.nemesis(history.FPause, at, at+4*msNS, &history.Value{Target: "pause-holder"}, verified(paused, "SIGSTOP (synthetic run)"))
	info := wInv + int64(g.s.OpTimeout)
	g.op(p, history.FWrite, kn, wInv, info, history.Info, writeIn, nil, "timeout")
	expiry := at + int64(g.s.SessionTimeout)
	gone := &history.Value{Session: sess, PID: pid(p), Target: fmt.Sprintf("process %d (pid %d), session %s", p, pid(p), sess),
		TargetProcess: history.Int(p), LastSeenNS: history.Int64(at), Verified: history.Bool(true), Detail: "no server lists the session (synthetic run)"}
	g.nemesis(history.FSessionGone, expiry+100*msNS, expiry+100*msNS+200_000, gone, gone)
	g.keyFree[k] = max(g.keyFree[k], expiry+50*msNS)
	resume := at + int64(g.s.Pause)
	g.nemesis(history.FResume, resume, resume+5*msNS, paused, verified(paused, "SIGCONT (synthetic run)"))
	g.instant(resume+4*msNS, p, history.FSession, "", &history.Value{Session: sess, State: "disconnected", PID: pid(p)})
	late := &history.Value{Token: history.Int64(tok), Of: history.FWrite}
	g.calls = append(g.calls, call{at: resume + 5*msNS, op: register.OpWrite, key: kn, token: tok, hasToken: true, process: p,
		value: func() int64 { return *n },
		fill: func(e register.Entry, _ register.KeyState) {
			late.N, late.State = history.Int64(e.Value), "ok"
			if !e.Accepted {
				late.State = "fail"
			}
		}})
	g.instant(resume+6*msNS, p, history.FLate, kn, late)
	g.instant(resume+55*msNS, p, history.FSession, "", &history.Value{Session: sess, State: "expired", PID: pid(p)})
	g.instant(resume+56*msNS, p, history.FLost, kn, &history.Value{Token: history.Int64(tok), Node: node, Session: sess, State: "expired"})
	g.spawn(sl, info+msNS)
	g.nextFault = resume + int64(g.s.FaultEvery)
	g.faults++
	g.workloadEnd = max(g.workloadEnd, resume+56*msNS)
}

// verified is v as a completed, verified nemesis operation.
func verified(v *history.Value, detail string) *history.Value {
	out := *v
	out.Verified, out.Detail = history.Bool(true), detail
	return &out
}

// finish is the final phase: every fault undone, each worker reads
// every key without a token, and closes its session.
func (g *gen) finish() {
	t := g.workloadEnd + 100*msNS
	if g.s.FaultEvery > 0 {
		v := &history.Value{Target: "every fault of the run"}
		g.nemesis("restore", t, t+60*msNS, v, verified(v, "nothing left to undo (synthetic run)"))
		t += 100 * msNS
	}
	for _, sl := range g.slots {
		for k := range g.s.Keys {
			out := &history.Value{}
			g.op(sl.proc, history.FFinalRead, key(k), t, t+3*msNS, history.OK, nil, out, "")
			g.calls = append(g.calls, call{at: t + 2*msNS, op: register.OpRead, key: key(k), process: sl.proc,
				fill: func(e register.Entry, st register.KeyState) {
					out.N, out.Token = history.Int64(e.Value), history.Int64(st.Token)
				}})
			t += 4 * msNS
		}
	}
	for _, sl := range g.slots {
		g.instant(t, sl.proc, history.FSession, "", &history.Value{Session: sl.session, State: "closed", PID: pid(sl.proc)})
		t += msNS
	}
}

// commit runs the register's calls in time order through the register's
// own rule (Decide) and effect (ApplyEntry), as the live register does,
// and fills in what each answer tells the history.
func (g *gen) commit() ([]register.Entry, error) {
	slices.SortStableFunc(g.calls, func(a, b call) int { return cmp.Compare(a.at, b.at) })
	state := map[string]register.KeyState{}
	log := make([]register.Entry, 0, len(g.calls))
	for i, c := range g.calls {
		st, ok := state[c.key]
		if !ok {
			st = register.KeyState{Token: register.NoToken, Fence: register.NoToken}
		}
		acc, reason := register.Decide(g.s.Fencing, c.op, st, c.hasToken, c.token)
		e := register.Entry{Seq: int64(i + 1), Wall: g.s.StartWall + c.at, Op: c.op, Key: c.key, Token: register.NoToken,
			HasToken: c.hasToken, Value: st.Value, Process: c.process, Accepted: acc, Reason: reason,
			PrevValue: st.Value, PrevToken: st.Token, PrevFence: st.Fence, Mode: g.s.Fencing}
		if c.hasToken {
			e.Token, e.PID = c.token, pid(c.process)
		}
		if c.op == register.OpWrite {
			e.Value = c.value()
		}
		next, err := register.ApplyEntry(st, e)
		if err != nil {
			return nil, fmt.Errorf("synth: register call %d: %w", i, err)
		}
		state[c.key] = next
		if c.fill != nil {
			c.fill(e, next)
		}
		log = append(log, e)
	}
	return log, nil
}
