package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/zkjvm"
)

// Program is the server a local cluster runs, one process per server:
// ZooKeeper's JVM (the default), or another lock service (redis-server,
// etcd; --service). Everything else a local cluster does (namespaces,
// ports, the run tag, pause, kill, partitions, logs in the run folder) is
// the same for every program, so a service is only what differs here.
type Program interface {
	// Name names the servers in logs and errors ("zk", "redis", "etcd").
	Name() string
	// Ports are the ports one server listens on in netns mode, where it
	// has an address of its own; the client port first. In loopback mode
	// as many free ports are chosen for each server.
	Ports() []int
	// Check says why the program cannot run on this machine (its binary
	// or jars missing), or nil: before anything of a run is made.
	Check() error
	// Configure writes n's files in n.Dir() before its first start; all
	// are the cluster's servers, n among them.
	Configure(n *Node, all []*Node) error
	// Command is the program and arguments that start n in the
	// foreground, logging to stdout or stderr.
	Command(n *Node) (exe string, args []string)
	// Status asks the server n itself whether it serves and in which role.
	Status(ctx context.Context, n *Node) (cluster.Status, error)
	// Probe names what Status sends, for the records ("srvr", "PING").
	Probe() string
	// Ready reports whether the servers' statuses make a whole service.
	Ready(sts []cluster.NodeStatus) bool
}

// ZooKeeper is the default program: a ZooKeeper JVM of an ensemble,
// configured by zoo.cfg from the cluster's Config.
type ZooKeeper struct{}

var _ Program = ZooKeeper{}

func (ZooKeeper) Name() string  { return "zk" }
func (ZooKeeper) Ports() []int  { return []int{2181, 2888, 3888} }
func (ZooKeeper) Probe() string { return "srvr" }

// Check: java and the jars (DefaultClassPath).
func (ZooKeeper) Check() error { return Available() }

// Ready: one leader, the others followers (cluster.Ready).
func (ZooKeeper) Ready(sts []cluster.NodeStatus) bool { return cluster.Ready(sts) }

func (ZooKeeper) Command(n *Node) (string, []string) {
	args := zkjvm.Args(n.c.cfg.ClassPath, filepath.Join(n.dir, "zoo.cfg"))
	return n.c.cfg.Java, append(n.c.archive.flags(n.id), args...)
}

// Status is srvr's answer.
func (ZooKeeper) Status(ctx context.Context, n *Node) (cluster.Status, error) {
	out, err := cluster.FourLetter(ctx, n.ClientAddr(), "srvr")
	if err != nil {
		return cluster.Status{}, err
	}
	return cluster.ParseSrvr(out), nil
}

// Configure writes myid and zoo.cfg.
func (ZooKeeper) Configure(n *Node, all []*Node) error {
	data := filepath.Join(n.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("zk node %d: %w", n.id, err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(n.id)+"\n"), 0o644); err != nil {
		return fmt.Errorf("zk node %d: write myid: %w", n.id, err)
	}
	if err := os.WriteFile(filepath.Join(n.dir, "zoo.cfg"), []byte(zooCfg(&n.c.cfg, data, n, all)), 0o644); err != nil {
		return fmt.Errorf("zk node %d: write zoo.cfg: %w", n.id, err)
	}
	return nil
}
