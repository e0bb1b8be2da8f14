package local

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
)

// EtcdEnv overrides the etcd binary (default: etcd on PATH, Debian's
// etcd-server package).
const EtcdEnv = "ZKCHAOS_ETCD"

// probeBound bounds one status probe without a deadline of its own.
const probeBound = 2 * time.Second

// Etcd runs an etcd cluster, one member per server, peers on the
// servers' own addresses (their namespaces' in netns mode). Raft's
// heartbeat is 100 ms and its election timeout 1 s (etcd's defaults):
// shorter ones make a loaded 2-core machine elect for nothing, and a
// lease's minimum TTL is 1.5 election timeouts, rounded up to whole
// seconds (2 s here), whatever the client asks.
type Etcd struct{}

var _ Program = Etcd{}

func (Etcd) Name() string  { return "etcd" }
func (Etcd) Ports() []int  { return []int{2379, 2380} }
func (Etcd) Probe() string { return "maintenance/status" }

// StopGrace: a member stopped last tries to hand its leadership on for
// seconds; its WAL is fsynced, so a short grace loses nothing.
func (Etcd) StopGrace() time.Duration { return 2 * time.Second }

func (Etcd) binary() string { return binaryOf(EtcdEnv, "etcd") }

// Check: the binary can be found.
func (e Etcd) Check() error { return findBinary(EtcdEnv, e.binary(), "etcd-server") }

// Ready: one leader, the others followers, as a ZooKeeper ensemble.
func (Etcd) Ready(sts []cluster.NodeStatus) bool { return cluster.Ready(sts) }

// Configure makes the data directory; etcd takes its configuration as
// flags (Command), and a restarted member finds its cluster in its WAL.
func (Etcd) Configure(n *Node, _ []*Node) error {
	if err := os.MkdirAll(filepath.Join(n.dir, "data"), 0o700); err != nil {
		return fmt.Errorf("etcd node %d: %w", n.id, err)
	}
	return nil
}

func (e Etcd) Command(n *Node) (string, []string) {
	var peers []string
	for _, p := range n.c.nodes {
		peers = append(peers, fmt.Sprintf("n%d=http://%s", p.id, p.Addr(1)))
	}
	client, peer := "http://"+n.Addr(0), "http://"+n.Addr(1)
	return e.binary(), []string{
		"--name", fmt.Sprintf("n%d", n.id),
		"--data-dir", filepath.Join(n.dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", strings.Join(peers, ","),
		"--initial-cluster-state", "new", "--initial-cluster-token", "zkchaos",
		"--heartbeat-interval", "100", "--election-timeout", "1000",
		"--logger", "zap", "--log-outputs", "stderr",
	}
}

// etcdStatus is the part of the gateway's maintenance status the harness
// reads (uint64s come as strings).
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
		Revision string `json:"revision"`
	} `json:"header"`
	Leader string `json:"leader"`
}

// Status asks the member's own view through the JSON gateway
// (POST /v3/maintenance/status): leader when it names itself, follower
// when it knows another leader, not serving without one.
func (Etcd) Status(ctx context.Context, n *Node) (cluster.Status, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, probeBound)
		defer cancel()
	}
	url := "http://" + n.ClientAddr() + "/v3/maintenance/status"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		return cluster.Status{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return cluster.Status{}, fmt.Errorf("etcd status %s: %w", n.ClientAddr(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return cluster.Status{}, fmt.Errorf("etcd status %s: %s", n.ClientAddr(), resp.Status)
	}
	var st etcdStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return cluster.Status{}, fmt.Errorf("etcd status %s: %w", n.ClientAddr(), err)
	}
	return parseEtcdStatus(st), nil
}

func parseEtcdStatus(st etcdStatus) cluster.Status {
	rev, _ := strconv.ParseInt(st.Header.Revision, 10, 64)
	out := cluster.Status{Zxid: rev}
	switch {
	case st.Leader == "" || st.Leader == "0":
	case st.Leader == st.Header.MemberID:
		out.Mode, out.Serving = "leader", true
	default:
		out.Mode, out.Serving = "follower", true
	}
	return out
}
