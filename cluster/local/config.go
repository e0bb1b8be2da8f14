// Package local runs a lock service's servers as processes started
// directly by the controller (ZooKeeper JVMs by default; redis-server or
// etcd members with --service, see Program), each in its own network
// namespace (netns mode) or all on 127.0.0.1 with their own ports
// (loopback mode, no root needed).
package local

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/zkjvm"
	"github.com/zkchaos/zkchaos/host/netns"
)

// Config describes the ensemble.
type Config struct {
	Nodes int
	// Dir is the run folder's sub-directory for the servers (e.g.
	// <run>/zk); n<i>/ in it holds each server's config, data and log, and
	// is left in place by Close.
	Dir string
	// TickTime is ZooKeeper's time unit (default 200ms): small so that
	// elections and session expiries happen within a short run.
	TickTime time.Duration
	// MaxSessionTimeout raises the server's cap above 20 ticks when the
	// workload asks for longer sessions.
	MaxSessionTimeout time.Duration
	ForceSync         bool
	// Network gives each server its own namespace (host n<i>); nil means
	// loopback mode. The caller owns it: Close removes only the hosts.
	Network *netns.Network
	// Env is the run's process tag (proc.Env), added to every JVM.
	Env []string
	// Java is the java binary (default "java").
	Java string
	// ClassPath defaults to $ZOOKEEPER_HOME's jars and conf when
	// ZOOKEEPER_HOME is set, else Debian's libzookeeper-java jars.
	ClassPath string
	// FourLetterWords are the only four-letter words the servers answer
	// (4lw.commands.whitelist); default cluster.FourLetterWords.
	FourLetterWords []string
	// Program is the server each node runs; nil is ZooKeeper (and the
	// fields above that name ZooKeeper's settings apply to it only).
	Program Program
	Logger  *slog.Logger
}

func (c *Config) defaults() error {
	if c.Nodes < 1 {
		return fmt.Errorf("config: Nodes must be ≥ 1, got %d", c.Nodes)
	}
	if c.Dir == "" {
		return errors.New("config: Dir is required")
	}
	if c.TickTime <= 0 {
		c.TickTime = 200 * time.Millisecond
	}
	if c.TickTime%time.Millisecond != 0 {
		return fmt.Errorf("config: TickTime %s is not whole milliseconds", c.TickTime)
	}
	if c.Program == nil {
		c.Program = ZooKeeper{}
	}
	if _, zk := c.Program.(ZooKeeper); !zk {
		if err := c.Program.Check(); err != nil {
			return err
		}
		if c.Logger == nil {
			c.Logger = slog.New(slog.DiscardHandler)
		}
		return nil
	}
	if c.Java == "" {
		c.Java = "java"
	}
	if c.ClassPath == "" {
		cp, err := DefaultClassPath()
		if err != nil {
			return err
		}
		c.ClassPath = cp
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if len(c.FourLetterWords) == 0 {
		c.FourLetterWords = cluster.FourLetterWords
	}
	for _, w := range c.FourLetterWords {
		if len(w) != 4 || strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") != "" {
			return fmt.Errorf("config: %q is not a four-letter word", w)
		}
	}
	return nil
}

// Available reports why no ensemble can start on this machine with the
// default Java and class path, or nil if one can; tests skip on it rather
// than fail where ZooKeeper is not installed.
func Available() error {
	var errs []error
	if _, err := exec.LookPath("java"); err != nil {
		errs = append(errs, fmt.Errorf("no java on PATH (install a JRE 11 or later, Debian's openjdk-17-jre-headless: scripts/install-deps.sh run): %w", err))
	}
	if _, err := DefaultClassPath(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// DefaultClassPath is the class path used when Config.ClassPath is empty.
// It fails when the jars are missing, or lack a class the server cannot
// start without (checkServerJars), so a missing install is reported
// before any JVM starts (and tests can skip on it).
func DefaultClassPath() (string, error) {
	if home := os.Getenv("ZOOKEEPER_HOME"); home != "" {
		jars, err := filepath.Glob(filepath.Join(home, "lib", "*.jar"))
		if err != nil || len(jars) == 0 {
			return "", fmt.Errorf("no jars in $ZOOKEEPER_HOME/lib (%s)", home)
		}
		if err := checkServerJars(jars, fmt.Sprintf("$ZOOKEEPER_HOME/lib (%s)", home), "not a ZooKeeper server's lib"); err != nil {
			return "", err
		}
		return strings.Join(append(jars, filepath.Join(home, "conf")), ":"), nil
	}
	const install = "install Debian's libzookeeper-java and libslf4j-java: scripts/install-deps.sh run, or set ZOOKEEPER_HOME to a ZooKeeper tarball"
	jars := strings.Split(zkjvm.DebianClassPath, ":")
	for _, p := range jars {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("ZooKeeper's jars not found (%s): %w", install, err)
		}
	}
	if err := checkServerJars(jars, "ZooKeeper's class path "+zkjvm.DebianClassPath+" and the jars its manifests name", install); err != nil {
		return "", err
	}
	return zkjvm.DebianClassPath, nil
}

// zooCfg is the server's configuration (zkjvm.ZooCfg). Ports are those
// of the node; in netns mode every server has its own IP and the default
// ports.
func zooCfg(c *Config, dataDir string, self *Node, all []*Node) string {
	servers := make([]zkjvm.Server, len(all))
	for i, n := range all {
		servers[i] = zkjvm.Server{ID: n.id, IP: n.ip, Quorum: n.ports[1], Election: n.ports[2]}
	}
	return zkjvm.ZooCfg(zkjvm.Settings{TickTime: c.TickTime, MaxSessionTimeout: c.MaxSessionTimeout, ForceSync: c.ForceSync,
		DataDir: dataDir, ClientPort: self.ports[0], ClientAddr: self.ip, FourLetterWords: c.FourLetterWords, Servers: servers})
}
