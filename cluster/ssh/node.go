package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/zkchaos/zkchaos/cluster"
	iptchain "github.com/zkchaos/zkchaos/cluster/chain"
	"github.com/zkchaos/zkchaos/cluster/zkjvm"
)

// The server's ports on its host: ZooKeeper's defaults.
const (
	ClientPort   = 2181
	QuorumPort   = 2888
	ElectionPort = 3888
)

// signalWait bounds how long a signal's effect is awaited on the host.
const signalWait = 5 * time.Second

// Node is one ZooKeeper server on its own host. It implements
// cluster.Node; every verb is a command on the host.
type Node struct {
	id   int
	host *Host
	// dir is the server's directory on the host (config, data, log, pid
	// file, lease), distinct per run and per node even when the hosts
	// share a file system.
	dir   string
	chain string
	// addr is where the run's processes connect (a relay on the run's
	// bridge, or the host's client address itself).
	addr    string
	logPath string
	c       *Cluster

	// mu orders the verbs of one server, as the local backend's do.
	mu sync.Mutex
}

var _ cluster.Node = (*Node)(nil)

// ID implements cluster.Node: the position in --hosts, from 1.
func (n *Node) ID() int { return n.id }

// ClientAddr is where the run's processes reach the server.
func (n *Node) ClientAddr() string { return n.addr }

// Target is the server's client address on its host.
func (n *Node) Target() string { return net.JoinHostPort(n.host.IP, strconv.Itoa(ClientPort)) }

// Dir is the server's directory on its host.
func (n *Node) Dir() string { return n.dir }

// LogPath is the server's log, fetched into the run folder by Close.
func (n *Node) LogPath() string { return n.logPath }

func (n *Node) name() string { return fmt.Sprintf("zk node %d (host %s)", n.id, n.host.Name) }

// run runs script on the node's host with D set to its directory.
func (n *Node) run(ctx context.Context, script string) (string, error) {
	out, err := n.host.Run(ctx, fmt.Sprintf("D=%s\n%s", Quote(n.dir), script), nil)
	return strings.TrimSpace(out), err
}

// jvmFunc defines jvm, which prints "<pid> <state>" of the server's JVM
// and fails when it does not run (a zombie does not). The JVM is found by
// its command line, which names the server's zoo.cfg, unique per run and
// node: no pid file to go stale or to be read half-written. No script
// may hold that path literally, or it would find itself: they all say
// "$D/zoo.cfg".
const jvmFunc = `jvm() {
  for p in $(pgrep -f -- "$D/zoo.cfg"); do
    s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f1)
    [ -n "$s" ] && [ "$s" != Z ] && { echo "$p $s"; return 0; }
  done
  return 1
}
`

// procScript prints the JVM's "<pid> <state>", or nothing.
const procScript = jvmFunc + "jvm; true"

// Process is the JVM as the host's /proc shows it.
func (n *Node) Process(ctx context.Context) (cluster.Process, error) {
	pid, state, err := n.proc(ctx)
	if err != nil || pid == 0 {
		return cluster.Process{}, err
	}
	return cluster.Process{Running: true, Stopped: state == "T", Instance: fmt.Sprintf("host %s pid %d", n.host.Name, pid), PID: pid}, nil
}

func (n *Node) proc(ctx context.Context) (pid int, state string, err error) {
	out, err := n.run(ctx, procScript)
	if err != nil {
		return 0, "", fmt.Errorf("process of %s: %w", n.name(), err)
	}
	if out == "" {
		return 0, "", nil
	}
	p, st, _ := strings.Cut(out, " ")
	pid, err = strconv.Atoi(p)
	if err != nil {
		return 0, "", fmt.Errorf("process of %s: %q", n.name(), out)
	}
	return pid, st, nil
}

// Start launches the JVM detached from the SSH session (setsid, nohup),
// appending to its log, and returns its PID once the host's /proc shows
// it; a JVM already running is an error.
func (n *Node) Start(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	java := "java"
	for _, a := range zkjvm.Args(n.c.classPath, "@cfg@") {
		if a == "@cfg@" {
			java += ` "$D/zoo.cfg"`
			continue
		}
		java += " " + Quote(a)
	}
	script := jvmFunc + fmt.Sprintf(`cd $D
if j=$(jvm); then echo "already running as pid ${j%%%% *}" >&2; exit 1; fi
echo "=== zkchaos: starting node %d at $(date -Is) ===" >>zk.log
setsid nohup %s >>zk.log 2>&1 </dev/null &
for i in $(seq 50); do j=$(jvm) && echo ${j%% *} && exit 0; sleep 0.1; done
echo "no JVM 5s after starting it (zk.log: $(tail -n 3 zk.log))" >&2; exit 1`, n.id, java)
	out, err := n.run(ctx, script)
	if err != nil {
		return "", fmt.Errorf("start %s: %w", n.name(), err)
	}
	if _, err := strconv.Atoi(out); err != nil {
		return "", fmt.Errorf("start %s: not a pid: %q", n.name(), out)
	}
	n.c.log.Info("zk node started", "node", n.id, "host", n.host.Name, "pid", out, "addr", n.Target())
	return fmt.Sprintf("running on host %s as pid %s", n.host.Name, out), nil
}

// findPid sets $pid to the server's JVM, or ends the script with exit
// status notRunning: each verb finds and acts in one session (a session
// costs a login shell on the host).
const findPid = jvmFunc + `j=$(jvm) || { echo "not running"; exit 3; }
pid=${j%% *}
`

// notRunning is findPid's exit status when there is no JVM.
const notRunning = 3

// isNotRunning says err is findPid's.
func isNotRunning(err error) bool {
	var ee *ssh.ExitError
	return errors.As(err, &ee) && ee.ExitStatus() == notRunning
}

// waitGone is a script fragment: wait up to %d tenths of a second for
// $pid to be gone (or a zombie), then fail.
const waitGone = `gone() { st=$(sed 's/.*) //' /proc/$pid/stat 2>/dev/null | cut -d' ' -f1); [ -z "$st" ] || [ "$st" = Z ]; }
for i in $(seq %d); do gone && exit 0; sleep 0.1; done
echo "pid $pid still there" >&2; exit 1`

// Stop ends the JVM gracefully: SIGCONT (a stopped JVM cannot act on
// SIGTERM), SIGTERM, and SIGKILL after 10 s. No JVM is nothing to do.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	script := findPid + "kill -CONT $pid; kill -TERM $pid\n" +
		fmt.Sprintf(strings.Replace(waitGone, "exit 1", "kill -KILL $pid; sleep 0.5; gone || exit 1", 1), 100)
	if _, err := n.run(ctx, script); err != nil && !isNotRunning(err) {
		return fmt.Errorf("stop %s: %w", n.name(), err)
	}
	return nil
}

// Kill SIGKILLs the JVM and returns once the host's /proc no longer has
// it and its client port refuses srvr.
func (n *Node) Kill(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out, err := n.run(ctx, findPid+"echo $pid\nkill -KILL $pid\n"+fmt.Sprintf(waitGone, 100))
	if err != nil {
		if isNotRunning(err) {
			return "", fmt.Errorf("kill %s: not running", n.name())
		}
		return "", fmt.Errorf("kill %s: %w", n.name(), err)
	}
	if err := cluster.Refuses(ctx, n); err != nil {
		return "", fmt.Errorf("kill %s: pid %s gone but %w", n.name(), out, err)
	}
	return fmt.Sprintf("pid %s gone from /proc on host %s; srvr refused", out, n.host.Name), nil
}

// Pause stops the JVM with SIGSTOP and returns once the host's /proc
// shows it stopped (state T).
func (n *Node) Pause(ctx context.Context) (string, error) {
	v, err := n.signal(ctx, "STOP", true)
	if err != nil {
		return "", fmt.Errorf("pause %s: %w", n.name(), err)
	}
	return v, nil
}

// Resume continues the JVM and returns once it no longer shows stopped.
func (n *Node) Resume(ctx context.Context) (string, error) {
	v, err := n.signal(ctx, "CONT", false)
	if err != nil {
		return "", fmt.Errorf("resume %s: %w", n.name(), err)
	}
	return v, nil
}

// signal sends sig to the JVM and waits until /proc shows it stopped (or
// not), all in one session, and says what it saw.
func (n *Node) signal(ctx context.Context, sig string, stopped bool) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	test := `[ "$st" = T ]`
	if !stopped {
		test = `[ "$st" != T ]`
	}
	script := findPid + fmt.Sprintf(`kill -%s $pid || exit 1
for i in $(seq %d); do st=$(sed 's/.*) //' /proc/$pid/stat | cut -d' ' -f1); %s && echo "$pid $st" && exit 0; sleep 0.05; done
echo "pid $pid state $st after SIG%s" >&2; exit 1`, sig, int(signalWait/(50*time.Millisecond)), test, sig)
	out, err := n.run(ctx, script)
	if err != nil {
		if isNotRunning(err) {
			return "", errors.New("not running")
		}
		return "", err
	}
	pid, st, _ := strings.Cut(out, " ")
	return fmt.Sprintf("SIG%s to pid %s on host %s; /proc there shows state %s", sig, pid, n.host.Name, st), nil
}

// Status asks the server itself (srvr), at its host's client address.
func (n *Node) Status(ctx context.Context) (cluster.Status, error) {
	st, err := cluster.Srvr(ctx, n.Target())
	if err != nil {
		return cluster.Status{}, fmt.Errorf("status of %s: %w", n.name(), err)
	}
	return st, nil
}

// Isolate drops all traffic between the server's host and the peers'
// hosts, both ways, by rules in the run's chain on the host, and checks
// that iptables lists them.
func (n *Node) Isolate(ctx context.Context, peers []cluster.Node) (string, error) {
	ips := make([]string, 0, len(peers))
	for _, p := range peers {
		pn, ok := p.(*Node)
		if !ok {
			return "", fmt.Errorf("isolate %s: peer n%d is not a server of this backend", n.name(), p.ID())
		}
		ips = append(ips, pn.host.IP)
	}
	script, want, err := iptchain.Isolate(n.chain, ips)
	if err != nil {
		return "", fmt.Errorf("isolate %s: %w", n.name(), err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.run(ctx, "set -e\n"+script); err != nil {
		return "", fmt.Errorf("isolate %s: %w", n.name(), err)
	}
	rules, err := n.rules(ctx)
	if err != nil {
		return "", fmt.Errorf("isolate %s: %w", n.name(), err)
	}
	for _, w := range want {
		if !slices.Contains(rules, w) {
			return "", fmt.Errorf("isolate %s: rule %q not listed after adding it (rules: %q)", n.name(), w, rules)
		}
	}
	return fmt.Sprintf("iptables on host %s: %s", n.host.Name, strings.Join(rules, " | ")), nil
}

// Heal flushes the run's chain on the host and checks none is left.
func (n *Node) Heal(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.run(ctx, iptchain.Flush(n.chain)); err != nil {
		return "", fmt.Errorf("heal %s: %w", n.name(), err)
	}
	rules, err := n.rules(ctx)
	if err != nil {
		return "", fmt.Errorf("heal %s: %w", n.name(), err)
	}
	if len(rules) > 0 {
		return "", fmt.Errorf("heal %s: rules left after flush: %q", n.name(), rules)
	}
	return fmt.Sprintf("iptables on host %s lists no rules in %s", n.host.Name, n.chain), nil
}

// Rules lists the run's rules on the host as iptables prints them.
func (n *Node) Rules(ctx context.Context) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rules(ctx)
}

func (n *Node) rules(ctx context.Context) ([]string, error) {
	out, err := n.run(ctx, "iptables -w -S")
	if err != nil {
		return nil, fmt.Errorf("rules of %s: %w", n.name(), err)
	}
	return iptchain.Rules(out, n.chain), nil
}
