package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/run/runner"
)

// workerStartTimeout bounds one worker's start up to its hello: eight
// Curator JVMs starting at once on two cores take several seconds each.
const workerStartTimeout = 90 * time.Second

// benchWorker is one worker process of a subject, started as a run
// starts its workers (subjects.Command, runner.ProcessCommand,
// worker.Proc) but recording nothing: the bench only counts.
type benchWorker struct {
	p    *worker.Proc
	host *netns.Host
	logf *os.File
}

// quiet is the worker handler of the bench: a throughput measurement has
// no history to write.
type quiet struct{}

func (quiet) Event(worker.Message)                           {}
func (quiet) Complete(worker.Request, worker.Message, error) {}
func (quiet) Late(worker.Request, worker.Message)            {}
func (quiet) ProtocolError(error)                            {}

// startWorkers starts n workers of subject at once, processes first..,
// their locks under root. On error the ones started are stopped.
func (e *env) startWorkers(ctx context.Context, subject, root string, first, n int) ([]*benchWorker, error) {
	ws := make([]*benchWorker, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[i], errs[i] = e.startWorker(ctx, subject, root, first+i)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.stopWorkers(ws)
		return nil, err
	}
	return ws, nil
}

func (e *env) startWorker(ctx context.Context, subject, root string, process int) (*benchWorker, error) {
	return e.startWorkerIn(ctx, e.ens.Net, subject, root, process)
}

// startWorkerIn starts a worker in a namespace of its own on net's bridge,
// or without one when net is nil.
func (e *env) startWorkerIn(ctx context.Context, net *netns.Network, subject, root string, process int) (*benchWorker, error) {
	prog, args, err := subjects.Command(e.exe, subject, subjects.Flags{ZK: e.connect(), Register: e.reg.URL(),
		Process: process, SessionTimeout: e.cfg.SessionTimeout, Token: recipes.TokenCzxid, Root: root})
	if err != nil {
		return nil, fmt.Errorf("subject %s: %w", subject, err)
	}
	env := e.reg.WorkerEnv(e.procEnv)
	if e.cfg.Profile {
		dir, err := filepath.Abs(e.run.Dir)
		if err != nil {
			return nil, fmt.Errorf("profile folder: %w", err)
		}
		env = append(env, worker.ProfileEnv+"="+dir)
	}
	cmd, host, err := runner.ProcessCommand(ctx, net, fmt.Sprintf("w%d", process), prog, env, args...)
	if err != nil {
		return nil, err
	}
	w := &benchWorker{host: host}
	if w.logf, err = os.Create(e.run.WorkerLog(process)); err != nil {
		e.removeHost(host)
		return nil, fmt.Errorf("worker log: %w", err)
	}
	w.p = worker.New(cmd, worker.Options{Handler: quiet{}, Log: w.logf, LogHead: 1 << 20, LogTail: 1 << 20})
	sctx, cancel := context.WithTimeout(ctx, workerStartTimeout)
	defer cancel()
	if err := w.p.Start(sctx); err != nil {
		w.logf.Close()
		e.removeHost(host)
		return nil, fmt.Errorf("start %s worker %d: %w", subject, process, err)
	}
	return w, nil
}

// stopWorkers closes every worker's input (each closes its session and
// exits), kills those still alive after a grace, and removes their
// namespaces. Nil entries (workers that did not start) are skipped.
func (e *env) stopWorkers(ws []*benchWorker) {
	for _, w := range ws {
		if w != nil {
			_ = w.p.CloseInput()
		}
	}
	// One deadline for all: once it passes, whoever is left is killed.
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	expired := false
	for _, w := range ws {
		if w == nil {
			continue
		}
		if !expired {
			select {
			case <-w.p.Done():
			case <-deadline.C:
				expired = true
			}
		}
		select {
		case <-w.p.Done():
		default:
			e.log.Warn("worker did not exit; killing", "pid", w.p.PID())
			_ = w.p.Kill()
			<-w.p.Done()
		}
		w.logf.Close()
		e.removeHost(w.host)
	}
}

func (e *env) removeHost(h *netns.Host) {
	if h == nil || e.ens.Net == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.ens.Net.RemoveHost(ctx, h); err != nil {
		e.log.Warn("remove worker namespace", "ns", h.NS, "err", err)
	}
}
