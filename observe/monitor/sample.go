// Package monitor records, while a run lasts, what an operator following
// the runbook (docs/background.md#what-the-runbook-asks) would see with
// zkCli and nc:
// every lock directory's children with their sequence numbers and
// ephemeral owners, and every server's mntr and cons. It samples at a fixed
// interval and at every nemesis step, into monitor.jsonl beside the
// history, so the report can show the ensemble as it stood just before a
// violation.
//
// The monitor only reads: one ZooKeeper session without watches, and
// four-letter words the servers already answer (cluster.FourLetterWords).
// Whatever fails while it samples (a paused server, a partition) is
// written into the sample as an error; it never fails the run.
package monitor

import (
	"fmt"
	"slices"
)

// Why a sample was taken.
const (
	WhyInterval = "interval"
	WhyNemesis  = "nemesis"
)

// Sample is one look at the ensemble.
type Sample struct {
	Seq int `json:"seq"`
	// TimeNS is when the sample started, on the run's clock (the
	// history's Time); TookNS how long it took: every observation in it
	// was made between TimeNS and TimeNS+TookNS.
	TimeNS int64 `json:"time_ns"`
	TookNS int64 `json:"took_ns"`
	// Wall is the start in Unix ns, for readers comparing with logs.
	Wall int64 `json:"wall_ns"`
	// Why is WhyInterval or WhyNemesis; Step names the nemesis step
	// ("pause ok n2") and HistoryIndex its completion's index in the
	// history.
	Why          string `json:"why"`
	Step         string `json:"step,omitempty"`
	HistoryIndex *int64 `json:"history_index,omitempty"`
	// Session is the monitor's own ZooKeeper session (0x…), to be told
	// apart from the workers' in cons.
	Session string   `json:"session,omitempty"`
	Dirs    []Dir    `json:"dirs"`
	Servers []Server `json:"servers"`
	// Dropped counts nemesis steps whose sample was dropped since the
	// previous sample (the queue of steps was full).
	Dropped int `json:"dropped_steps,omitempty"`
}

// EndNS is when the sample's last observation was made.
func (s Sample) EndNS() int64 { return s.TimeNS + s.TookNS }

// Dir is one lock directory, as `ls` and `stat` of it and of each child
// show it.
type Dir struct {
	Path string `json:"path"`
	// Cversion and NumChildren are the directory's own stat: every child
	// created or deleted adds one to Cversion, so two samples tell how
	// many nodes came and went between them, whatever was not seen.
	Cversion    int32   `json:"cversion"`
	NumChildren int32   `json:"num_children"`
	Children    []Child `json:"children"`
	// Error says why the directory could not be read; then the rest is
	// empty.
	Error string `json:"error,omitempty"`
}

// Child is one node in a lock directory, sorted by Seq.
type Child struct {
	Name string `json:"name"`
	// Seq is the sequence number ZooKeeper appended (the last 10 digits),
	// -1 when the name has none.
	Seq int64 `json:"seq"`
	// Owner is the ephemeralOwner as zkCli prints it (0x…), "" for a
	// persistent node; Czxid is the creating transaction.
	Owner string `json:"owner,omitempty"`
	Czxid int64  `json:"czxid"`
	// Error is set when the child's stat failed (Gone: deleted between
	// the ls and the stat).
	Gone  bool   `json:"gone,omitempty"`
	Error string `json:"error,omitempty"`
}

// Waiters is how many children queue behind the first (the holder).
func (d Dir) Waiters() int { return max(len(d.Children)-1, 0) }

// Server is one server's answers to mntr and cons.
type Server struct {
	ID   int    `json:"id"`
	Addr string `json:"addr"`
	Mntr *Mntr  `json:"mntr,omitempty"`
	// MntrError says why there is no Mntr: no answer, or "not serving".
	MntrError string `json:"mntr_error,omitempty"`
	// Sessions are the session ids cons lists (0x…, sorted), nil with
	// ConsError.
	Sessions  []string `json:"sessions"`
	ConsError string   `json:"cons_error,omitempty"`
}

// Lists reports whether the server's cons listed session.
func (s Server) Lists(session string) bool {
	_, ok := slices.BinarySearch(s.Sessions, session)
	return ok
}

// SessionHex writes a session id as zkCli and cons do.
func SessionHex(id int64) string { return fmt.Sprintf("0x%x", id) }

// Liveness says what the servers' cons showed of session in s: the ids
// of the servers that listed it, and of those that gave no list.
func (s Sample) Liveness(session string) (listing, silent []int) {
	for _, sv := range s.Servers {
		switch {
		case sv.ConsError != "":
			silent = append(silent, sv.ID)
		case sv.Lists(session):
			listing = append(listing, sv.ID)
		}
	}
	return listing, silent
}
