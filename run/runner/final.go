package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/resource/register"
	"github.com/zkchaos/zkchaos/workloads"
)

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
func (c *controller) restore() {
	aborted := c.aborted()
	ctx, cancel := context.WithTimeout(c.hard, restoreWait+30*time.Second)
	defer cancel()
	c.nemesisOp(history.Invoke, history.FRestore, &history.Value{Target: "every fault of the run"}, "")
	start := time.Now()
	var did []string
	var errs []error
	if c.net != nil {
		for _, h := range c.net.Hosts() {
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
	if c.zk != nil && !aborted {
		d, err := c.zk.Restore(ctx)
		did = append(did, d...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	// Workers and the register are found by their tag, like the janitor
	// finds them: the controller's own bookkeeping may be what failed.
	if tagged, err := proc.FindTagged(c.runID); err != nil {
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
		c.log.Warn("final phase: faults were still in effect", "undone", detail)
	}
	if c.zk != nil && !aborted {
		wctx, wcancel := context.WithTimeout(ctx, restoreWait)
		err := c.zk.WaitReady(wctx)
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
		c.nemesisOp(history.Info, history.FRestore, v, err.Error())
		c.log.Error("final phase: restore incomplete", "err", err)
		return
	}
	v.Verified = history.Bool(true)
	c.nemesisOp(history.OK, history.FRestore, v, "")
	c.log.Info("final phase: everything healed", "detail", detail)
}

// final is the second half: the workload's last operations (see
// workloads.Workload.Final), bounded by 30 s, after the recovery time, so
// that a paused worker's stale write that lands late is already in what
// they see.
func (c *controller) final() {
	if c.fleet == nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.hard, 30*time.Second)
	defer cancel()
	c.wl.Final(ctx, c)
}

// Clients implements workloads.End: every slot.
func (c *controller) Clients() []workloads.Client {
	out := make([]workloads.Client, len(c.fleet.slots))
	for i, s := range c.fleet.slots {
		out[i] = s
	}
	return out
}

// InitTasks implements workloads.Resource through the register.
func (c *controller) InitTasks(ctx context.Context, service string, tasks []string) error {
	if c.reg == nil {
		return fmt.Errorf("the task table is the register's: --resource %s has none", c.cfg.Resource)
	}
	_, err := c.reg.client(10*time.Second).InitTasks(ctx, register.InitRequest{Service: service, Tasks: tasks})
	return err
}

// FinalRead implements workloads.End. The read goes to the register
// directly, without a token, rather than through the worker protocol,
// because a worker may read only under the lock: a final read must show
// what the resource holds whether or not the lock service still grants
// locks, and a token-less read moves no fence (resource/register/types.go).
func (c *controller) FinalRead(ctx context.Context, cl workloads.Client, key string) {
	res := c.resource()
	if res == nil {
		return
	}
	p := cl.Process()
	c.record(history.Event{Process: history.Process(p), Type: history.Invoke, F: history.FFinalRead, Key: key})
	rep, err := res.reader(3*time.Second).Read(ctx, register.ReadRequest{Key: key, Process: p})
	switch {
	case err != nil && register.IsDefinite(err):
		c.record(history.Event{Process: history.Process(p), Type: history.Fail, F: history.FFinalRead, Key: key, Error: err.Error()})
	case err != nil:
		c.record(history.Event{Process: history.Process(p), Type: history.Info, F: history.FFinalRead, Key: key, Error: err.Error()})
	default:
		c.record(history.Event{Process: history.Process(p), Type: history.OK, F: history.FFinalRead, Key: key,
			Value: &history.Value{N: history.Int64(rep.Value), Token: history.Int64(rep.Token)}})
	}
}

func (c *controller) nemesisOp(t history.Type, f string, v *history.Value, errText string) {
	if _, err := c.nemesisHistory().Append(history.Event{Process: history.Nemesis, Type: t, F: f, Value: v, Error: errText}); err != nil {
		c.log.Error("record", "err", err)
	}
}

func (c *controller) record(e history.Event) {
	if _, err := c.rec.Append(e); err != nil {
		c.log.Error("record", "err", err)
	}
}
