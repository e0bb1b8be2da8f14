// Package cluster is the one view of a ZooKeeper ensemble that the
// controller and the nemeses have, whichever backend runs it (local JVMs,
// containers, or an ensemble the user already runs).
package cluster

import (
	"context"
	"errors"
	"fmt"
)

// ErrUnsupported is returned by a verb the backend cannot perform (e.g.
// partitions without network namespaces). Callers report it, never ignore
// it. It wraps the standard errors.ErrUnsupported, which is what callers
// test for: packages below cluster/ (host/workerproc) return that one
// without importing this package.
var ErrUnsupported = fmt.Errorf("not supported by this cluster backend: %w", errors.ErrUnsupported)

// FourLetterWords are the four-letter words the harness sends: srvr (the
// cluster's status, nemesis verification), cons (a session still listed,
// expire-holder, the runbook monitor) and mntr (the runbook monitor's
// server metrics). Anyone who reaches a client port can send one, so the
// servers answer these and nothing else; a word the harness starts to use
// is added here, the one list both backends configure.
var FourLetterWords = []string{"srvr", "cons", "mntr"}

// The lock services a run can test locks on (--service). ZooKeeper is the
// default and the one every backend runs; the others run on the local
// backend (cluster/local's programs).
const (
	ZooKeeper = "zookeeper"
	Redis     = "redis"
	Etcd      = "etcd"
)

// ServiceOf is s, or ZooKeeper when s is empty (a run recorded before
// --service existed).
func ServiceOf(s string) string {
	if s == "" {
		return ZooKeeper
	}
	return s
}

// Status is a server's view of itself, from the srvr four-letter word.
type Status struct {
	// Mode is "leader", "follower", "standalone", or "" when the server
	// does not answer or is not serving.
	Mode    string
	Zxid    int64
	Clients int
	Serving bool
}

// Capability is a server verb that not every backend can perform.
type Capability string

// The verbs a server fault needs. Status, Start and Stop every backend
// has: without them there is no ensemble to test.
const (
	// CanPause is Pause and Resume: the server's process stopped by a
	// signal, as a GC pause or a hung VM stops it.
	CanPause Capability = "pause a server"
	// CanKill is Kill and a later Start on the same data.
	CanKill Capability = "kill and restart a server"
	// CanPartition is Isolate and Heal: cutting traffic between servers.
	CanPartition Capability = "cut traffic between servers"
)

// Capabilities is what a backend can do to its servers, so a fault it
// cannot perform is refused before the run instead of failing (or, worse,
// being recorded) at every injection.
type Capabilities struct {
	// Backend names the backend for messages ("local", "docker").
	Backend string
	// Lacks maps each verb the backend cannot perform to why.
	Lacks map[Capability]string
}

// Need returns nil when the backend can perform c, else an error that
// says which backend cannot and why.
func (cs Capabilities) Need(c Capability) error {
	if why, ok := cs.Lacks[c]; ok {
		return fmt.Errorf("the %s backend cannot %s: %s", cs.Backend, c, why)
	}
	return nil
}

// Process is a backend's own view of a server's process: whether it runs,
// whether a signal stopped it, and which incarnation it is. The backend
// reads it wherever it lives (the host's /proc, the engine and the
// container's own ps), so its callers never do.
type Process struct {
	// Running: started and not exited (a stopped process runs).
	Running bool
	// Stopped: stopped by SIGSTOP and not continued.
	Stopped bool
	// Instance names this incarnation for the history ("pid 4242",
	// "container zkchaos-…-n1 pid 4242"); it changes when the server is
	// restarted, and is "" when it does not run.
	Instance string
	// PID is the host PID of the server's process when the backend has
	// one (0 otherwise): an identifier for the history, nothing to act on.
	PID int
}

// Node is one ZooKeeper server. Every fault verb verifies its own effect
// the backend's way and returns what it verified, in words for the
// history; a verb the backend lacks (see Capabilities) returns
// ErrUnsupported.
type Node interface {
	ID() int
	// ClientAddr is host:port for clients.
	ClientAddr() string
	// LogPath is the server's output in the run folder (complete after
	// the cluster's Close).
	LogPath() string
	// Process is the backend's view of the server's process now.
	Process(ctx context.Context) (Process, error)
	// Start starts a server that does not run (again after Kill or Stop,
	// with its data intact); it returns when the process exists, not when
	// it serves.
	Start(ctx context.Context) (verified string, err error)
	// Stop ends the server gracefully (SIGTERM, then SIGKILL).
	Stop(ctx context.Context) error
	// Kill ends the server at once and returns when it is gone.
	Kill(ctx context.Context) (verified string, err error)
	// Pause stops the server's process; Resume continues it.
	Pause(ctx context.Context) (verified string, err error)
	Resume(ctx context.Context) (verified string, err error)
	// Status asks the server itself (srvr).
	Status(ctx context.Context) (Status, error)
	// Isolate drops all traffic between this server and peers, both
	// ways, until Heal; calls add up.
	Isolate(ctx context.Context, peers []Node) (verified string, err error)
	// Heal removes every Isolate of this server and verifies none is
	// left; a no-op when there is none.
	Heal(ctx context.Context) (verified string, err error)
	// Rules lists the server's partition rules in effect, one per line.
	Rules(ctx context.Context) ([]string, error)
}

// Cluster is an ensemble.
type Cluster interface {
	Nodes() []Node
	// ConnectString is the comma-separated client addresses.
	ConnectString() string
	// Capabilities says which server verbs the backend can perform.
	Capabilities() Capabilities
	// Start starts every server.
	Start(ctx context.Context) error
	// WaitReady returns when one leader and all other servers as followers
	// are serving, or ctx ends.
	WaitReady(ctx context.Context) error
	// Restore undoes whatever faults are left on the servers, whoever made
	// them, and returns one line per thing it had to do.
	Restore(ctx context.Context) ([]string, error)
	// Close stops every server and removes what the backend made (but not
	// the logs and data in the run folder).
	Close(ctx context.Context) error
}
