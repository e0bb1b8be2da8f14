// Package janitor is the dead-man switch of a run: a separate process,
// started before anything else, that undoes every fault and removes every
// process and namespace of the run as soon as the controller dies, however
// it dies (SIGKILL and OOM included).
//
// The controller holds the write end of a pipe that is the janitor's
// stdin. The kernel closes it when the controller dies, so EOF is the
// signal; nothing depends on the controller running any code at death.
// While alive, the controller tells the janitor what it cannot discover
// alone (the network slot); processes need no telling, they are found by
// their environment tag (package proc).
package janitor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/cluster/docker"
	"github.com/zkchaos/zkchaos/cluster/external"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
)

// Message is one line the controller writes to the janitor.
type Message struct {
	// Slot is the network slot the run took (netns mode).
	Slot *int `json:"slot,omitempty"`
	// Done says the controller tore down by itself; the janitor sweeps once
	// more (idempotent) and exits.
	Done bool `json:"done,omitempty"`
	// ZNodes is the run's own subtree on an ensemble it does not own
	// (--cluster external): removed by the janitor if the controller dies
	// without saying done.
	ZNodes *ZNodes `json:"znodes,omitempty"`
}

// ZNodes is what removing a run's subtree takes.
type ZNodes struct {
	// ZK is the ensemble's addresses as the user gave them.
	ZK   string `json:"zk"`
	Root string `json:"root"`
	// Auth is the run's identity (recipes.AuthEnv's value form), "" with
	// --acl off. It travels on the janitor's stdin only.
	Auth string `json:"auth,omitempty"`
}

// sweepTimeout bounds the janitor's final sweep.
const sweepTimeout = 2 * time.Minute

// Serve runs the janitor: read messages until EOF, then sweep. It returns
// when the sweep is done.
func Serve(ctx context.Context, run string, in io.Reader, log *slog.Logger) error {
	var slots []int
	var zn *ZNodes
	sc := bufio.NewScanner(in)
	done := false
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			// Not the line: it may hold the run's identity.
			log.Warn("janitor: bad message", "bytes", len(sc.Bytes()), "err", err)
			continue
		}
		if m.Slot != nil {
			slots = append(slots, *m.Slot)
			log.Info("janitor: watching network slot", "slot", *m.Slot)
		}
		if m.Done {
			done = true
		}
		if m.ZNodes != nil {
			zn = m.ZNodes
			log.Info("janitor: watching the run's znodes", "root", zn.Root, "zk", zn.ZK)
		}
	}
	if !done {
		log.Warn("janitor: controller gone without saying done; sweeping the run", "run", run)
	}
	// Bounded: a slot's lock held by a hung process must not keep the
	// janitor forever; what it could not sweep is chaos cleanup's.
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	err := Sweep(ctx, run, slots, log)
	if !done && zn != nil {
		// After the sweep: the workers are gone and add nothing more.
		err = errors.Join(err, sweepZNodes(ctx, run, zn, log))
	}
	return err
}

// sweepZNodes removes the run's subtree and then its record; a subtree
// that could not go keeps its record, for chaos cleanup.
func sweepZNodes(ctx context.Context, run string, zn *ZNodes, log *slog.Logger) error {
	n, err := removeZNodes(ctx, zn)
	if err != nil {
		log.Error("janitor: the run's znodes (their record stays for chaos cleanup)", "root", zn.Root, "err", err)
		return fmt.Errorf("janitor: %w", err)
	}
	log.Info("janitor: the run's znodes removed", "root", zn.Root, "znodes", n)
	return ForgetZNodes(run)
}

// removeZNodes removes the run's subtree from the user's ensemble as the
// run's identity, which only the janitor (or a record, records.go) still
// has once the controller is dead, and says how many znodes went.
func removeZNodes(ctx context.Context, zn *ZNodes) (int, error) {
	auth, err := recipes.ParseAuth(zn.Auth)
	if err != nil {
		return 0, fmt.Errorf("the run's znodes: %w", err)
	}
	return external.RemoveTree(ctx, zn.ZK, zn.Root, auth)
}

// Sweep resumes and kills every process of the run, removes its Docker
// containers, then the network slots whose slot file names the run, then
// its Docker networks. Processes go first: a paused server must not
// outlive its namespace, and a namespace is only removable once its
// processes are gone. A Docker network goes after the namespaces attached
// to it, and only once they are all gone: the engine could otherwise give
// its subnet (a netns slot) to a new run while the slot still holds this
// run's namespaces. The slots are found by their files, not from what the
// controller told (told is only logged): a controller may die before
// telling, and a slot it released may belong to another run by now, which
// the slot's lock and file settle.
func Sweep(ctx context.Context, run string, told []int, log *slog.Logger) error {
	start := time.Now()
	var errs []error
	pids, err := proc.SweepRun(run, 1500*time.Millisecond)
	if err != nil {
		errs = append(errs, err)
	}
	dk, err := openDocker(ctx, log)
	if err != nil {
		errs = append(errs, err)
	}
	if dk != nil {
		defer dk.Close()
		did, err := dk.RemoveContainers(ctx, run)
		logLines(log, did)
		if err != nil {
			errs = append(errs, err)
		}
	}
	swept, netErr := netns.ReleaseRun(ctx, run)
	if netErr != nil {
		errs = append(errs, fmt.Errorf("sweep network: %w", netErr))
	}
	if dk != nil && netErr == nil {
		did, err := dk.RemoveNetworks(ctx, run)
		logLines(log, did)
		if err != nil {
			errs = append(errs, err)
		}
	} else if dk != nil {
		log.Warn("janitor: docker network kept until the namespaces attached to it are gone (chaos cleanup)", "run", run)
	}
	log.Info("janitor: swept", "run", run, "killed", len(pids), "slots_told", told, "slots_swept", swept,
		"took", time.Since(start).String(), "errors", len(errs))
	return errors.Join(errs...)
}

func logLines(log *slog.Logger, lines []string) {
	for _, l := range lines {
		log.Info("janitor: docker " + l)
	}
}

// Handle is the controller's end of the janitor.
type Handle struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	w    io.WriteCloser
	done chan struct{}
}

// Start launches `exe janitor --run RUN --log LOGPATH` in its own session,
// so that neither a Ctrl-C at the terminal nor the controller's process
// group being killed reaches it.
func Start(exe, run, logPath string) (*Handle, error) {
	cmd := exec.Command(exe, "janitor", "--run", run, "--log", logPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start janitor: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start janitor: %w", err)
	}
	h := &Handle{cmd: cmd, w: w, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(h.done) }()
	return h, nil
}

// PID of the janitor process.
func (h *Handle) PID() int { return h.cmd.Process.Pid }

// Owners are this process as the controller and the janitor: what the run
// makes from here on records them (the slot file, the run's process tag,
// the containers' labels), so that no sweep but theirs touches it while
// either runs.
func (h *Handle) Owners() proc.Owners {
	o := proc.Self()
	o.Janitor = proc.IdentOf(h.PID())
	return o
}

// Tell sends a message. A failure means the janitor is gone: the run is no
// longer protected, which the caller must treat as a harness failure.
func (h *Handle) Tell(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("tell janitor: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := h.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("tell janitor: %w", err)
	}
	return nil
}

// Finish says done, closes the pipe and waits (bounded) for the final sweep.
func (h *Handle) Finish(timeout time.Duration) error {
	err := h.Tell(Message{Done: true})
	h.mu.Lock()
	_ = h.w.Close()
	h.mu.Unlock()
	select {
	case <-h.done:
	case <-time.After(timeout):
		return fmt.Errorf("janitor did not finish within %s", timeout)
	}
	return err
}

// Alive reports whether the janitor still runs.
func (h *Handle) Alive() bool {
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// Main is `chaos janitor`. It ignores SIGINT and SIGHUP: those are aimed at
// the controller (a terminal's Ctrl-C or hang-up), and the janitor must
// outlive it to clean up after it.
func Main(run, logPath string) int {
	signalIgnore()
	var out io.Writer = os.Stderr
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			defer f.Close()
			out = f
		}
	}
	log := slog.New(slog.NewTextHandler(out, nil))
	if err := Serve(context.Background(), run, os.Stdin, log); err != nil {
		log.Error("janitor: sweep incomplete", "err", err)
		return 1
	}
	return 0
}

// Cleanup removes what earlier runs left: every process tagged with a run
// whose controller and janitor are both gone (proc.Owners), the Docker
// containers and the external ensemble's subtrees (records.go) of such
// runs, every network slot whose owners are gone or
// unknown (netns.Abandoned), then the Docker networks of those runs (in
// Sweep's order, for Sweep's reasons). A run whose controller died but
// whose janitor still runs is its janitor's to sweep. With all, runs in
// progress go too. It returns one line per thing removed, and is safe to
// run twice, and at once in two processes.
func Cleanup(ctx context.Context, all bool) ([]string, error) {
	c := &cleaner{all: all}
	c.processes()
	// The containers and the slots do not wait for each other (only a
	// Docker network waits for the namespaces attached to it), and
	// reaching the engine alone can take half a second.
	var dk *docker.Sweeper
	var runs []docker.Run
	var wg sync.WaitGroup
	wg.Go(func() { dk, runs = c.containers(ctx) })
	wg.Go(func() { c.subtrees(ctx) })
	kept := c.slots(ctx)
	wg.Wait()
	if dk == nil {
		return c.report, errors.Join(c.errs...)
	}
	defer dk.Close()
	for _, r := range runs {
		if kept[r.ID] {
			c.say(fmt.Sprintf("run %s: docker network kept until its namespaces are gone", r.ID))
			continue
		}
		did, err := dk.RemoveNetworks(ctx, r.ID)
		c.lines(r.ID, did)
		c.fail(err)
	}
	return c.report, errors.Join(c.errs...)
}

// startSweepTimeout bounds SweepDead: a slot's lock held by a hung
// process must not keep a run from starting.
const startSweepTimeout = 30 * time.Second

// SweepDead is what every run does at its start, beside its setup:
// Cleanup of the runs whose controller and janitor are both gone (a whole
// job killed at once leaves such runs, and without this their slots would
// stay until someone ran chaos cleanup). Each thing removed is logged. A
// failure is logged, not returned: what could not be removed keeps its
// slot out of use, and the run takes another.
func SweepDead(ctx context.Context, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, startSweepTimeout)
	defer cancel()
	start := time.Now()
	swept, err := Cleanup(ctx, false)
	for _, l := range swept {
		log.Info("swept a dead run's leftover", "what", l)
	}
	if err != nil {
		log.Warn("sweep of dead runs incomplete (chaos cleanup retries it)", "err", err)
	}
	if len(swept) > 0 || err != nil {
		log.Info("dead runs swept", "removed", len(swept), "took", time.Since(start).Round(time.Millisecond).String())
	}
}

// cleaner is one chaos cleanup: what it removed and what failed, from
// the containers' part and the slots' at once.
type cleaner struct {
	all    bool
	mu     sync.Mutex
	report []string
	errs   []error
}

func (c *cleaner) fail(err error) {
	if err != nil {
		c.mu.Lock()
		c.errs = append(c.errs, err)
		c.mu.Unlock()
	}
}

func (c *cleaner) say(line string) {
	c.mu.Lock()
	c.report = append(c.report, line)
	c.mu.Unlock()
}

func (c *cleaner) lines(run string, did []string) {
	for _, l := range did {
		c.say(fmt.Sprintf("run %s: %s", run, l))
	}
}

// processes kills the tagged processes whose owners are gone. Only those:
// a process tagged with a dead run's id may belong to a live process (chaos
// check starts PostgreSQL on a killed run's data under that run's id).
func (c *cleaner) processes() {
	tagged, err := proc.FindTagged("")
	c.fail(err)
	runs := map[string][]int{}
	for _, t := range tagged {
		if c.all || t.Owners.Gone() {
			runs[t.Run] = append(runs[t.Run], t.PID)
		}
	}
	for _, run := range slices.Sorted(maps.Keys(runs)) {
		pids := runs[run]
		if err := proc.KillAndWait(pids, 3*time.Second); err != nil {
			c.fail(fmt.Errorf("run %s: %w", run, err))
		}
		c.say(fmt.Sprintf("run %s: killed %d processes %v", run, len(pids), pids))
	}
}

// containers removes the containers of the Docker runs that are leftovers
// and returns the engine (nil where none answers) and those runs, whose
// networks go after the slots.
func (c *cleaner) containers(ctx context.Context) (*docker.Sweeper, []docker.Run) {
	dk, err := openDocker(ctx, slog.Default())
	c.fail(err)
	if dk == nil {
		return nil, nil
	}
	all, err := dk.Runs(ctx)
	c.fail(err)
	var runs []docker.Run
	for _, r := range all {
		if !dockerLeftover(r, c.all) {
			continue
		}
		runs = append(runs, r)
		did, err := dk.RemoveContainers(ctx, r.ID)
		c.lines(r.ID, did)
		c.fail(err)
	}
	return dk, runs
}

// slots sweeps the network slots the rule allows; it returns the runs of
// slots whose sweep failed, whose Docker networks must then stay.
func (c *cleaner) slots(ctx context.Context) (failed map[string]bool) {
	failed = map[string]bool{}
	slots, err := netns.Slots()
	c.fail(err)
	rule := netns.SweepRule(netns.Abandoned)
	if c.all {
		rule = netns.AnyOwner
	}
	for _, s := range slots {
		if !c.all && !s.Leftover() {
			continue // a run in progress: not even its lock is waited for
		}
		// Decided again under the slot's lock: Slots() is only a snapshot.
		owner, swept, err := netns.SweepSlot(ctx, s.Slot, rule)
		if err != nil {
			c.fail(fmt.Errorf("network slot %d: %w", s.Slot, err))
			failed[s.RunID] = true
			continue
		}
		if swept {
			run := "unknown"
			if owner != nil && owner.RunID != "" {
				run = owner.RunID
			}
			c.say(fmt.Sprintf("network slot %d (run %s): removed", s.Slot, run))
		}
	}
	return failed
}
