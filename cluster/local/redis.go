package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zkchaos/zkchaos/cluster"
)

// RedisServerEnv overrides the redis-server binary (default: redis-server
// on PATH, Debian's redis-server package).
const RedisServerEnv = "ZKCHAOS_REDIS_SERVER"

// Redis runs N independent redis-server masters, no replication between
// them: what Redlock assumes (independent masters, a majority of which
// must grant), and of which the single-instance lock uses the first.
//
// Persistence: appendonly with appendfsync always, no RDB snapshots. A
// kill-redis restarts the server on its data like a kill-zk does, and the
// fencing counter (INCR) must survive that restart, or a
// restarted server hands out tokens it already gave and the fence moves
// backwards; every write fsynced is the price (small for a lock's few
// writes). The lock keys survive too, with their absolute expiry.
type Redis struct{}

var _ Program = Redis{}

func (Redis) Name() string  { return "redis" }
func (Redis) Ports() []int  { return []int{6379} }
func (Redis) Probe() string { return "PING" }

// binary is the redis-server to start.
func (Redis) binary() string { return binaryOf(RedisServerEnv, "redis-server") }

// Check: the binary can be found.
func (r Redis) Check() error { return findBinary(RedisServerEnv, r.binary(), "redis-server") }

// Ready: every server answers PING (they are independent).
func (Redis) Ready(sts []cluster.NodeStatus) bool {
	for _, s := range sts {
		if s.Err != nil || !s.Status.Serving {
			return false
		}
	}
	return len(sts) > 0
}

// Configure writes redis.conf: its own address, its data directory, the
// persistence above, its process title left alone (redis rewrites its
// title over the environment, where the run's tag is, and the janitor
// would no longer find it), no protected mode (the run's addresses only, no
// password: the network is the run's own).
func (Redis) Configure(n *Node, _ []*Node) error {
	data := filepath.Join(n.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("redis node %d: %w", n.id, err)
	}
	conf := fmt.Sprintf(`bind %s
port %d
protected-mode no
daemonize no
set-proc-title no
logfile ""
dir %s
save ""
appendonly yes
appendfsync always
`, n.ip, n.ports[0], data)
	if err := os.WriteFile(filepath.Join(n.dir, "redis.conf"), []byte(conf), 0o644); err != nil {
		return fmt.Errorf("redis node %d: write redis.conf: %w", n.id, err)
	}
	return nil
}

func (r Redis) Command(n *Node) (string, []string) {
	return r.binary(), []string{filepath.Join(n.dir, "redis.conf")}
}

// Status sends PING: +PONG is a serving standalone master; -LOADING (the
// append-only file being replayed after a restart) is not serving yet.
func (Redis) Status(ctx context.Context, n *Node) (cluster.Status, error) {
	conn, done, err := cluster.DialBounded(ctx, n.ClientAddr(), probeBound)
	if err != nil {
		return cluster.Status{}, err
	}
	defer done()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return cluster.Status{}, fmt.Errorf("PING %s: %w", n.ClientAddr(), err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return cluster.Status{}, fmt.Errorf("PING %s: %w", n.ClientAddr(), err)
	}
	line = strings.TrimSpace(line)
	if line == "+PONG" {
		return cluster.Status{Mode: "standalone", Serving: true}, nil
	}
	return cluster.Status{}, fmt.Errorf("PING %s answered %s", n.ClientAddr(), strconv.Quote(line))
}

// binaryOf is the binary named by env, else def.
func binaryOf(env, def string) string {
	if b := os.Getenv(env); b != "" {
		return b
	}
	return def
}

// findBinary says, in words for the user, why bin cannot be started.
func findBinary(env, bin, pkg string) error {
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv(env) != "" {
			return fmt.Errorf("%s=%s: %w", env, bin, err)
		}
		return fmt.Errorf("%s not found (install Debian's %s: scripts/install-deps.sh, or set %s): %w", bin, pkg, env, err)
	}
	return nil
}
