package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/internal/logcap"
	"github.com/zkchaos/zkchaos/resource/register"
)

// placement says where a process of the run lives: its own namespace on
// the run's bridge (root), or the host's loopback (no root).
type placement struct {
	net *netns.Network
}

// command builds the command for a process named name (a namespace is made
// for it in netns mode) and returns the host, which is nil in loopback mode.
func (p placement) command(ctx context.Context, name, exe string, env []string, args ...string) (*exec.Cmd, *netns.Host, error) {
	var cmd *exec.Cmd
	var host *netns.Host
	if p.net != nil {
		h, err := p.net.AddHost(ctx, name)
		if err != nil {
			return nil, nil, fmt.Errorf("namespace for %s: %w", name, err)
		}
		host = h
		cmd = h.Command(context.Background(), exe, args...)
	} else {
		cmd = exec.Command(exe, args...)
	}
	cmd.Env = append(os.Environ(), env...)
	// Own process group: a Ctrl-C at the terminal reaches the controller
	// alone, which then stops everything in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, host, nil
}

// registerProc is the running `chaos register`.
type registerProc struct {
	cmd  *exec.Cmd
	host *netns.Host
	addr string
	// secret is what every call must present (register.SecretEnv).
	secret string
	// stderr keeps the last lines of its log, so an exit during the run
	// can say why even when its log file cannot be written (disk full).
	stderr *logcap.Tail
	done   chan struct{}
	err    error // Wait's result, set before done is closed
	// stopping is set before the controller stops it: an exit before
	// that is a harness failure.
	stopping atomic.Bool
}

// startRegister launches the register and waits for it to say where it
// listens. The run's secret goes to it through its environment only.
func startRegister(ctx context.Context, pl placement, exe string, env []string, sec runSecrets, applyLog, logPath, mode, idempotency string) (*registerProc, error) {
	listen := "127.0.0.1:0"
	cmd, host, err := pl.command(ctx, "reg", exe, sec.registerEnv(env), "register")
	if err != nil {
		return nil, err
	}
	if host != nil {
		listen = host.IP + ":8080"
	}
	cmd.Args = append(cmd.Args, "--listen", listen, "--log", applyLog, "--fencing", mode, "--idempotency", idempotency)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("register log: %w", err)
	}
	r := &registerProc{cmd: cmd, host: host, secret: sec.register, stderr: logcap.NewTail(logf, 5), done: make(chan struct{})}
	cmd.Stderr = r.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("start register: %w", err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start register: %w", err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() { // keep draining so the register never blocks on stdout
		}
	}()
	go func() {
		r.err = cmd.Wait()
		logf.Close()
		close(r.done)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			<-r.done
			return nil, fmt.Errorf("register exited before listening (see %s)", logPath)
		}
		var hello struct {
			Listen string `json:"listen"`
		}
		if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Listen == "" {
			r.stop(time.Second)
			return nil, fmt.Errorf("register said %q instead of its address", line)
		}
		r.addr = hello.Listen
		return r, nil
	case <-time.After(15 * time.Second):
		r.stop(time.Second)
		return nil, fmt.Errorf("register did not listen within 15s (see %s)", logPath)
	case <-ctx.Done():
		r.stop(time.Second)
		return nil, ctx.Err()
	}
}

func (r *registerProc) url() string { return "http://" + r.addr }

// client is a register client of the controller, presenting the secret.
func (r *registerProc) client(timeout time.Duration) *register.Client {
	return register.NewClient(r.url(), timeout, r.secret)
}

// exitError says that the register exited by itself, with its last words
// (valid after done). The register exits during a run only when its apply
// log cannot be written (see register.Serve), or when it crashes.
func (r *registerProc) exitError() error {
	why := "exit status 0"
	if r.err != nil {
		why = r.err.Error()
	}
	return fmt.Errorf("register exited during the run (%s): %s", why, r.stderr.Last())
}

// stop asks the register to shut down (SIGTERM lets it close its log
// cleanly), then kills it if it does not.
func (r *registerProc) stop(grace time.Duration) {
	if r == nil || r.cmd.Process == nil {
		return
	}
	r.stopping.Store(true)
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(grace):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// ProcessCommand builds the command of a process that joins the ensemble's
// network as a run's own processes do: in a namespace of its own named
// name on net's bridge (host returned, for net.RemoveHost once it exits),
// or on the host's loopback when net is nil. `chaos bench` starts its
// workers with it, so they sit where a run's workers sit.
func ProcessCommand(ctx context.Context, net *netns.Network, name, exe string, env []string, args ...string) (*exec.Cmd, *netns.Host, error) {
	return placement{net: net}.command(ctx, name, exe, env, args...)
}

// Register is a `chaos register` started outside a run (by `chaos
// bench`), with fresh secrets of its own and world-writable znodes
// (--acl off).
type Register struct {
	p   *registerProc
	sec runSecrets
}

// StartRegister starts the register in net (nil: loopback) with the given
// fencing mode, its apply log at applyLog and its stderr at logPath.
func StartRegister(ctx context.Context, net *netns.Network, exe string, env []string, applyLog, logPath, fencing string) (*Register, error) {
	sec, err := newRunSecrets(false)
	if err != nil {
		return nil, err
	}
	p, err := startRegister(ctx, placement{net: net}, exe, env, sec, applyLog, logPath, fencing, register.IdempotencyOn)
	if err != nil {
		return nil, err
	}
	return &Register{p: p, sec: sec}, nil
}

// URL is the register's base URL, the workers' --register.
func (r *Register) URL() string { return r.p.url() }

// WorkerEnv is base plus what a worker needs to call the register.
func (r *Register) WorkerEnv(base []string) []string { return r.sec.workerEnv(base) }

// Stop stops the register (SIGTERM, then a kill after grace).
func (r *Register) Stop(grace time.Duration) {
	if r != nil {
		r.p.stop(grace)
	}
}
