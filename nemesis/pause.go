package nemesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/proc"
)

// pauseHolder models a stop-the-world GC pause of the lock holder: SIGSTOP
// the worker that holds a lock for longer than the session timeout, so
// ZooKeeper expires its session and grants the lock to another while the
// paused worker still believes it holds it; then SIGCONT, and the paused
// worker carries on with whatever it was doing.
type pauseHolder struct {
	cfg    Config
	mu     sync.Mutex
	paused map[int]bool
}

const verifyTimeout = 2 * time.Second

func (p *pauseHolder) Run(ctx context.Context) error {
	defer func() { _ = p.Heal(context.Background()) }()
	for {
		if !sleep(ctx, p.cfg.Schedule.Quiet) {
			return nil
		}
		h, ok := p.waitHolder(ctx)
		if !ok {
			return nil
		}
		target := fmt.Sprintf("process %d (pid %d) holding %s with token %d", h.Process, h.PID, h.Key, h.Token)
		if h.InCriticalSection {
			target += ", in its critical section before its write"
		}
		v := &history.Value{PID: h.PID, Target: target}
		record(p.cfg, history.Invoke, history.FPause, v, "")
		p.mu.Lock()
		p.paused[h.PID] = true
		p.mu.Unlock()
		if err := proc.Pause(h.PID, verifyTimeout); err != nil {
			vv := *v
			vv.Verified = history.Bool(false)
			record(p.cfg, history.Info, history.FPause, &vv, err.Error())
			p.cfg.Logger.Warn("nemesis: pause not verified", "pid", h.PID, "err", err)
		} else {
			vv := *v
			vv.Verified = history.Bool(true)
			vv.Detail = "process state T in /proc"
			record(p.cfg, history.OK, history.FPause, &vv, "")
			p.cfg.Logger.Info("nemesis: paused holder", "target", target, "for", p.cfg.Schedule.Hold.String())
		}
		sleep(ctx, p.cfg.Schedule.Hold)
		p.resume(h.PID, target)
	}
}

// waitHolder polls for a holder, giving up only when ctx ends: with
// contention there is almost always one, and a fault skipped would be a
// silently weaker run.
func (p *pauseHolder) waitHolder(ctx context.Context) (Holder, bool) {
	deadline := time.Now().Add(time.Second)
	for {
		hs := p.cfg.Targets.Holders()
		// Within the first second, wait for a holder in its critical section.
		if time.Now().Before(deadline) {
			var in []Holder
			for _, h := range hs {
				if h.InCriticalSection {
					in = append(in, h)
				}
			}
			hs = in
		}
		h, ok := pickHolder(p.cfg.Rand, hs)
		if ok {
			return h, true
		}
		if !sleep(ctx, 5*time.Millisecond) {
			return Holder{}, false
		}
	}
}

func (p *pauseHolder) resume(pid int, target string) {
	v := &history.Value{PID: pid, Target: target}
	record(p.cfg, history.Invoke, history.FResume, v, "")
	err := proc.Resume(pid, verifyTimeout)
	p.mu.Lock()
	delete(p.paused, pid)
	p.mu.Unlock()
	vv := *v
	if err != nil {
		vv.Verified = history.Bool(false)
		record(p.cfg, history.Info, history.FResume, &vv, err.Error())
		return
	}
	vv.Verified = history.Bool(true)
	vv.Detail = "process no longer stopped (or gone)"
	record(p.cfg, history.OK, history.FResume, &vv, "")
}

// Heal resumes every process this nemesis paused and has not resumed.
func (p *pauseHolder) Heal(ctx context.Context) error {
	p.mu.Lock()
	var pids []int
	for pid := range p.paused {
		pids = append(pids, pid)
	}
	p.mu.Unlock()
	for _, pid := range pids {
		p.resume(pid, fmt.Sprintf("pid %d (heal)", pid))
	}
	return nil
}
