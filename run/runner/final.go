package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/resource/register"
	"github.com/zkchaos/zkchaos/workloads"
)

// finalPhase is what a run does once its workload ended: every fault
// goes (restore), and after the recovery time the workload's last
// operations (final reads) and the resource's final state are recorded.
// It implements workloads.End for the workload's Final.
type finalPhase struct {
	st    *runState
	runID string
	net   *netns.Network  // nil on loopback
	zk    cluster.Cluster // nil: no ensemble to restore
	// fleet is the run's workers (nil: none, nothing to read finally),
	// svc its services (the fenced resource the final reads go to).
	fleet *fleet
	svc   *services
	wl    workloads.Workload
	// rec is the run's history; nemHist where the nemesis records (the
	// restore is the nemesis's last operation).
	rec, nemHist history.Recorder
	recovery     time.Duration
}

// run heals everything, then, unless the run was aborted (why says what
// stopped the workload), waits the recovery time and reads finally.
func (p *finalPhase) run(why string) {
	// Every fault goes, whatever stopped the run.
	p.restore()
	if p.st.aborted() {
		p.st.log.Warn("run aborted: no final reads, no verdict", "why", why)
		return
	}
	p.settle()
	p.final()
	if p.svc.resource() != nil {
		p.svc.finalState(p.st.hard)
	}
	if p.st.runCtx.Err() == nil {
		_ = p.st.updateStatus(func(s *store.Status) { s.FinalPhase = true })
	}
}

// settleGrace is what settle waits after the last retired process is
// gone: bytes such a process wrote to the resource just before it was
// killed may still be in the resource's socket.
const settleGrace = 250 * time.Millisecond

// settle is the recovery wait. What can still act after restore is a
// retired worker process: one whose operation the history closed as info
// (a holder paused past its timeout, now resumed) and that may still act
// it out, its stale write above all. Each exits once its late answer is
// in (worker.Proc.Retire). So settle waits until no retired process is
// left, then settleGrace, at most the recovery time in all. The current
// processes owe nothing: the workload ended with every operation asked
// of them completed. A run with no retired process left goes on at once
// (after the grace) instead of waiting the whole recovery time, which a
// stale write needs only when there is a process to make it.
func (p *finalPhase) settle() {
	start := time.Now()
	ctx, cancel := context.WithTimeout(p.st.runCtx, p.recovery)
	defer cancel()
	p.st.log.Info("workload over; recovering", "at most", p.recovery.String())
	waited := 0
	for p.fleet != nil {
		n := p.fleet.retiredAlive()
		if n == 0 {
			break
		}
		waited = max(waited, n)
		if !ctxsleep.Sleep(ctx, 20*time.Millisecond) {
			p.st.log.Info("recovery time over with retired processes alive", "alive", n)
			return
		}
	}
	ctxsleep.Sleep(ctx, settleGrace)
	p.st.log.Info("recovered", "after", time.Since(start).Round(time.Millisecond), "retired processes waited for", waited)
}

// restoreWait bounds the wait for the ensemble to serve again at the end.
const restoreWait = 60 * time.Second

// restore is the first half of the final phase: whatever fault is still
// in effect when the workload ends goes, whoever made it and whether or
// not its own undo worked: every rule in every namespace of the run,
// every stopped process of the run, every dead server (restarted with its
// data). Then it waits for the ensemble to serve with every server. It is
// recorded as one nemesis operation saying what it had to do, so a fault
// the nemesis failed to undo still shows in the history. After an abort
// (the results folder or the register failed) the servers are neither
// restarted nor waited for: teardown stops them next, and a server that
// died of the same full disk would hold the run for a minute.
func (p *finalPhase) restore() {
	aborted := p.st.aborted()
	ctx, cancel := context.WithTimeout(p.st.hard, restoreWait+30*time.Second)
	defer cancel()
	p.nemesisOp(history.Invoke, history.FRestore, &history.Value{Target: "every fault of the run"}, "")
	start := time.Now()
	var did []string
	var errs []error
	if p.net != nil {
		for _, h := range p.net.Hosts() {
			rules, err := h.Rules(ctx)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if len(rules) == 0 {
				continue
			}
			if err := h.Heal(ctx); err != nil {
				errs = append(errs, err)
				continue
			}
			did = append(did, fmt.Sprintf("%s: removed %d rules", h.Name, len(rules)))
		}
	}
	if p.zk != nil && !aborted {
		d, err := p.zk.Restore(ctx)
		did = append(did, d...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	// Workers and the register are found by their tag, like the janitor
	// finds them: the controller's own bookkeeping may be what failed.
	if tagged, err := proc.FindTagged(p.runID); err != nil {
		errs = append(errs, err)
	} else {
		for _, t := range tagged {
			if proc.Stopped(t.PID) {
				if err := proc.Resume(t.PID, 5*time.Second); err != nil {
					errs = append(errs, err)
				} else {
					did = append(did, fmt.Sprintf("resumed pid %d", t.PID))
				}
			}
		}
	}
	detail := "nothing left to undo"
	if len(did) > 0 {
		detail = strings.Join(did, "; ")
		p.st.log.Warn("final phase: faults were still in effect", "undone", detail)
	}
	if p.zk != nil && !aborted {
		wctx, wcancel := context.WithTimeout(ctx, restoreWait)
		err := p.zk.WaitReady(wctx)
		wcancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("ensemble not serving again: %w", err))
		} else {
			detail += fmt.Sprintf("; ensemble whole after %s", time.Since(start).Round(time.Millisecond))
		}
	}
	v := &history.Value{Target: "every fault of the run", Detail: detail}
	if err := errors.Join(errs...); err != nil {
		v.Verified = history.Bool(false)
		p.nemesisOp(history.Info, history.FRestore, v, err.Error())
		p.st.log.Error("final phase: restore incomplete", "err", err)
		return
	}
	v.Verified = history.Bool(true)
	p.nemesisOp(history.OK, history.FRestore, v, "")
	p.st.log.Info("final phase: everything healed", "detail", detail)
}

// final is the second half: the workload's last operations (see
// workloads.Workload.Final), bounded by 30 s, after the recovery time, so
// that a paused worker's stale write that lands late is already in what
// they see.
func (p *finalPhase) final() {
	if p.fleet == nil {
		return
	}
	ctx, cancel := context.WithTimeout(p.st.hard, 30*time.Second)
	defer cancel()
	p.wl.Final(ctx, p)
}

// Clients implements workloads.End: every worker slot.
func (p *finalPhase) Clients() []workloads.Client { return p.fleet.Clients() }

// Applied implements workloads.End.
func (p *finalPhase) Applied(cl workloads.Client, key string) (int64, bool) {
	return p.fleet.appliedOf(cl.Process(), key)
}

// FinalRead implements workloads.End. The read goes to the register
// directly, without a token, rather than through the worker protocol,
// because a worker may read only under the lock: a final read must show
// what the resource holds whether or not the lock service still grants
// locks, and a token-less read moves no fence (resource/register/types.go).
func (p *finalPhase) FinalRead(ctx context.Context, cl workloads.Client, key string) {
	res := p.svc.resource()
	if res == nil {
		return
	}
	process := cl.Process()
	p.record(history.Event{Process: history.Process(process), Type: history.Invoke, F: history.FFinalRead, Key: key})
	rep, err := res.reader(3*time.Second).Read(ctx, register.ReadRequest{Key: key, Process: process})
	switch {
	case err != nil && register.IsDefinite(err):
		p.record(history.Event{Process: history.Process(process), Type: history.Fail, F: history.FFinalRead, Key: key, Error: err.Error()})
	case err != nil:
		p.record(history.Event{Process: history.Process(process), Type: history.Info, F: history.FFinalRead, Key: key, Error: err.Error()})
	default:
		p.record(history.Event{Process: history.Process(process), Type: history.OK, F: history.FFinalRead, Key: key,
			Value: &history.Value{N: history.Int64(rep.Value), Token: history.Int64(rep.Token)}})
	}
}

func (p *finalPhase) nemesisOp(t history.Type, f string, v *history.Value, errText string) {
	if _, err := p.nemHist.Append(history.Event{Process: history.Nemesis, Type: t, F: f, Value: v, Error: errText}); err != nil {
		p.st.log.Error("record", "err", err)
	}
}

func (p *finalPhase) record(e history.Event) {
	if _, err := p.rec.Append(e); err != nil {
		p.st.log.Error("record", "err", err)
	}
}
