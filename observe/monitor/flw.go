package monitor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zkchaos/zkchaos/cluster"
)

// Words are the four-letter words the monitor sends. The servers answer
// only cluster.FourLetterWords; Start refuses a word not among them, so
// the monitor cannot probe a server with something it was told to refuse.
var Words = []string{"mntr", "cons"}

// Mntr is the part of a server's mntr answer the runbook reads (the key
// figures of docs/background.md#what-the-metrics-mean): its state, request latency, the queue, and the counts of
// znodes, watches, ephemerals, connections and sessions.
type Mntr struct {
	State string `json:"state"`
	// Latencies are the server's since its start (ms), as mntr has them.
	AvgLatency  float64 `json:"avg_latency_ms"`
	MinLatency  int64   `json:"min_latency_ms"`
	MaxLatency  int64   `json:"max_latency_ms"`
	Outstanding int64   `json:"outstanding_requests"`
	Znodes      int64   `json:"znode_count"`
	Watches     int64   `json:"watch_count"`
	Ephemerals  int64   `json:"ephemerals_count"`
	Connections int64   `json:"alive_connections"`
	Sessions    int64   `json:"global_sessions"`
	// PacketsReceived counts the client requests (pings included) the
	// server received since its start: chaos bench divides its growth by
	// the operations of a window.
	PacketsReceived int64 `json:"packets_received"`
	// SyncedFollowers is the leader's only (nil on a follower).
	SyncedFollowers *int64 `json:"synced_followers,omitempty"`
}

// mntrInts are the integer fields of Mntr by their mntr key; a key missing
// from the answer (an older server) leaves its field 0.
func (m *Mntr) mntrInts() map[string]*int64 {
	return map[string]*int64{
		"zk_min_latency": &m.MinLatency, "zk_max_latency": &m.MaxLatency,
		"zk_outstanding_requests": &m.Outstanding, "zk_znode_count": &m.Znodes,
		"zk_watch_count": &m.Watches, "zk_ephemerals_count": &m.Ephemerals,
		"zk_num_alive_connections": &m.Connections, "zk_global_sessions": &m.Sessions,
		"zk_packets_received": &m.PacketsReceived,
	}
}

// ParseMntr reads a mntr answer: one "key<TAB>value" per line. An answer
// without zk_server_state is not a list of metrics (not serving, not
// whitelisted, cut short) and is an error quoting its first line.
func ParseMntr(out string) (*Mntr, error) {
	if cluster.IsNotServing(out) {
		return nil, cluster.ErrNotServing
	}
	m := &Mntr{}
	ints := m.mntrInts()
	seen := false
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(l, "\r"), "\t")
		if !ok {
			continue
		}
		var err error
		switch {
		case k == "zk_server_state":
			m.State, seen = v, true
		case k == "zk_avg_latency":
			m.AvgLatency, err = strconv.ParseFloat(v, 64)
		case k == "zk_synced_followers":
			var n int64
			n, err = strconv.ParseInt(v, 10, 64)
			m.SyncedFollowers = &n
		case ints[k] != nil:
			*ints[k], err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return nil, fmt.Errorf("mntr %s: %w", k, err)
		}
	}
	if !seen {
		return nil, fmt.Errorf("not a mntr answer: %q", cluster.FirstLine(out))
	}
	return m, nil
}

// SeqOf is the sequence number ZooKeeper appended to a sequential node's
// name (its last 10 digits), -1 when there is none.
func SeqOf(name string) int64 {
	if len(name) < 10 {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
