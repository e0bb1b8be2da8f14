package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// signalWait bounds how long Pause/Resume wait for the kernel to show the
// new state.
const signalWait = 5 * time.Second

// Node is one server process (a ZooKeeper JVM, a redis-server, an etcd
// member: the cluster's Program). It implements cluster.Node.
type Node struct {
	id int
	ip string
	// ports are the server's ports, the client port first (see
	// Program.Ports).
	ports        []int
	dir, logPath string
	host         *netns.Host // nil in loopback mode
	c            *Cluster

	mu      sync.Mutex
	pid     int
	done    chan struct{} // closed when the JVM has been reaped
	exitErr error
	paused  bool
}

var _ cluster.Node = (*Node)(nil)

func (n *Node) ID() int { return n.id }

// ClientAddr is ip:port for clients and four-letter words.
func (n *Node) ClientAddr() string { return n.Addr(0) }

// Addr is ip:port of the server's i-th port (0 is the client port).
func (n *Node) Addr(i int) string {
	return net.JoinHostPort(n.ip, strconv.Itoa(n.ports[i]))
}

// Port is the server's i-th port (0 is the client port).
func (n *Node) Port(i int) int { return n.ports[i] }

// Dir is the server's directory in the run folder (its configuration,
// data and log).
func (n *Node) Dir() string { return n.dir }

// name is how logs and errors call the server ("zk node 2").
func (n *Node) name() string { return fmt.Sprintf("%s node %d", n.c.cfg.Program.Name(), n.id) }

// IP is the server's address: its namespace's, or 127.0.0.1.
func (n *Node) IP() string { return n.ip }

// Host is the server's namespace, for partition faults; nil in loopback
// mode.
func (n *Node) Host() *netns.Host { return n.host }

// LogPath is the JVM's stdout and stderr, appended across restarts.
func (n *Node) LogPath() string { return n.logPath }

// Process is the JVM as the kernel shows it: running until reaped, and
// stopped when /proc says state T.
func (n *Node) Process(context.Context) (cluster.Process, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running() {
		return cluster.Process{}, nil
	}
	return cluster.Process{Running: true, Stopped: proc.Stopped(n.pid), Instance: fmt.Sprintf("pid %d", n.pid), PID: n.pid}, nil
}

// PID is the JVM's PID while it runs (paused counts), else 0.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running() {
		return n.pid
	}
	return 0
}

// running must be called with mu held.
func (n *Node) running() bool {
	if n.done == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Exited reports whether the JVM was started and has ended, and how.
func (n *Node) Exited() (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.done != nil && !n.running(), n.exitErr
}

// Start launches the JVM (again after Stop or Kill, with its data intact).
// It returns once the process exists, not when it serves: WaitReady or
// Status tell that.
func (n *Node) Start(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("start %s: %w", n.name(), err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running() {
		return "", fmt.Errorf("start %s: already running as pid %d", n.name(), n.pid)
	}
	f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return "", fmt.Errorf("start %s: open log: %w", n.name(), err)
	}
	fmt.Fprintf(f, "=== zkchaos: starting node %d at %s ===\n", n.id, time.Now().Format(time.RFC3339Nano))
	// The JVM outlives ctx (which only bounds the start), so it is not
	// tied to it.
	exe, args := n.c.cfg.Program.Command(n)
	var cmd *exec.Cmd
	if n.host != nil {
		cmd = n.host.Command(context.Background(), exe, args...)
	} else {
		cmd = exec.Command(exe, args...)
	}
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), n.c.cfg.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group: a Ctrl-C in the terminal reaches the controller
	// only, which then stops the servers in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return "", fmt.Errorf("start %s: %w", n.name(), err)
	}
	done := make(chan struct{})
	n.pid, n.done, n.exitErr, n.paused = cmd.Process.Pid, done, nil, false
	go func() {
		err := cmd.Wait() // reaps: no zombies
		f.Close()
		n.mu.Lock()
		n.exitErr = err
		n.mu.Unlock()
		close(done)
	}()
	n.c.cfg.Logger.Info(n.name()+" started", "node", n.id, "pid", n.pid, "addr", n.ClientAddr())
	return fmt.Sprintf("running as pid %d", n.pid), nil
}

// Stop ends the JVM gracefully: SIGTERM, and SIGKILL if it has not exited
// after stopGrace (or the program's StopGrace; dumpGrace for the node that
// writes the class archive) or when ctx ends. A paused JVM is resumed
// first, since it cannot act on SIGTERM while stopped.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	if !n.running() {
		n.mu.Unlock()
		return nil
	}
	pid, done, paused := n.pid, n.done, n.paused
	n.paused = false
	n.mu.Unlock()
	if paused {
		_ = proc.Resume(pid, signalWait)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s: SIGTERM pid %d: %w", n.name(), pid, err)
	}
	grace := stopGrace
	if g, ok := n.c.cfg.Program.(interface{ StopGrace() time.Duration }); ok {
		grace = g.StopGrace()
	}
	if n.c.archive.dumps(n.id) {
		grace = max(grace, dumpGrace)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		n.c.cfg.Logger.Info(n.name()+" stopped", "node", n.id, "pid", pid)
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	n.c.cfg.Logger.Warn(n.name()+" ignored SIGTERM, killing", "node", n.id, "pid", pid)
	return n.kill(pid, done)
}

// Kill SIGKILLs the JVM's process group and waits until it is reaped, so
// that on return the PID is gone and the ports are free. It verifies from
// both sides: the kernel has no such process, and the address refuses
// four-letter words.
func (n *Node) Kill(ctx context.Context) (string, error) {
	n.mu.Lock()
	if !n.running() {
		n.mu.Unlock()
		return "", fmt.Errorf("kill %s: not running", n.name())
	}
	pid, done := n.pid, n.done
	n.paused = false
	n.mu.Unlock()
	if err := n.kill(pid, done); err != nil {
		return "", err
	}
	n.c.cfg.Logger.Info(n.name()+" killed", "node", n.id, "pid", pid)
	if proc.Alive(pid) {
		return "", fmt.Errorf("kill %s: pid %d still alive after SIGKILL", n.name(), pid)
	}
	if err := cluster.Refuses(ctx, n); err != nil {
		return "", fmt.Errorf("kill %s: pid %d gone but %w", n.name(), pid, err)
	}
	return fmt.Sprintf("pid %d gone from /proc; %s refused", pid, n.c.cfg.Program.Probe()), nil
}

func (n *Node) kill(pid int, done chan struct{}) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: SIGKILL pid %d: %w", n.name(), pid, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill %s: pid %d not reaped 10s after SIGKILL", n.name(), pid)
	}
}

// Pause stops the JVM with SIGSTOP and returns once the kernel shows it
// stopped, so that a pause recorded in the history really happened.
func (n *Node) Pause(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running() {
		return "", fmt.Errorf("pause %s: not running", n.name())
	}
	sctx, cancel := context.WithTimeout(ctx, signalWait)
	defer cancel()
	if err := proc.PauseContext(sctx, n.pid); err != nil {
		return "", fmt.Errorf("pause %s: %w", n.name(), err)
	}
	n.paused = true
	return fmt.Sprintf("pid %d: process state T in /proc", n.pid), nil
}

// Resume continues a paused JVM and returns once it runs again.
func (n *Node) Resume(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running() {
		return "", fmt.Errorf("resume %s: not running", n.name())
	}
	sctx, cancel := context.WithTimeout(ctx, signalWait)
	defer cancel()
	if err := proc.ResumeContext(sctx, n.pid); err != nil {
		return "", fmt.Errorf("resume %s: %w", n.name(), err)
	}
	n.paused = false
	return fmt.Sprintf("pid %d: process no longer stopped", n.pid), nil
}

// Status asks the server itself, the program's way (ZooKeeper: srvr).
// A server that does not answer is an error with a zero Status.
func (n *Node) Status(ctx context.Context) (cluster.Status, error) {
	st, err := n.c.cfg.Program.Status(ctx, n)
	if err != nil {
		return cluster.Status{}, fmt.Errorf("status of %s: %w", n.name(), err)
	}
	return st, nil
}
