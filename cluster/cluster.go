// Package cluster is the one view of a ZooKeeper ensemble that the
// controller and the nemeses have, whichever backend runs it (local JVMs,
// containers, or an ensemble the user already runs).
package cluster

import (
	"context"
	"errors"
)

// ErrUnsupported is returned by a verb the backend cannot perform (e.g.
// partitions without network namespaces). Callers report it, never ignore it.
var ErrUnsupported = errors.New("not supported by this cluster backend")

// FourLetterWords are the four-letter words the harness sends: srvr (the
// cluster's status, nemesis verification) and cons (a session still
// listed, expire-holder). Anyone who reaches a client port can send one,
// so the servers answer these and nothing else; a word the harness starts
// to use is added here (the report's monitor will add mntr).
var FourLetterWords = []string{"srvr", "cons"}

// Status is a server's view of itself, from the srvr four-letter word.
type Status struct {
	// Mode is "leader", "follower", "standalone", or "" when the server
	// does not answer or is not serving.
	Mode    string
	Zxid    int64
	Clients int
	Serving bool
}

// Node is one ZooKeeper server.
type Node interface {
	ID() int
	// ClientAddr is host:port for clients.
	ClientAddr() string
	// PID is the OS process id of the server (0 when not running).
	PID() int
	Start(ctx context.Context) error
	// Stop ends the server gracefully (SIGTERM, then SIGKILL).
	Stop(ctx context.Context) error
	Kill(ctx context.Context) error
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Status(ctx context.Context) (Status, error)
	LogPath() string
	// Isolate drops all traffic between this server and peers, both ways,
	// until Heal; calls add up. A backend without its own network per
	// server returns ErrUnsupported.
	Isolate(ctx context.Context, peers []Node) error
	// Heal removes every Isolate of this server; a no-op when there is none.
	Heal(ctx context.Context) error
}

// Cluster is an ensemble.
type Cluster interface {
	Nodes() []Node
	// ConnectString is the comma-separated client addresses.
	ConnectString() string
	// WaitReady returns when one leader and all other servers as followers
	// are serving, or ctx ends.
	WaitReady(ctx context.Context) error
	// Close stops every server and removes what the backend made (but not
	// the logs and data in the run folder).
	Close(ctx context.Context) error
}
