package deaths

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/cluster/external"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/internal/testkit/dockertest"
)

// backend is where a campaign's runs put their ensemble.
type backend struct {
	name string
	// args are the flags that choose the backend.
	args []string
	// faults rotate over the deaths.
	faults []string
	// left lists what the backend keeps of a run beyond the machine's
	// processes and network (containers, znodes), for chaostest.AwaitClean.
	left func(runID string) []string
	// apart, when set (with left), is how long the next run waits for a dead run's
	// leftovers to go (the ssh rig's hosts: the dead run's servers keep
	// the ports the next run needs until their watchdogs' lease ends).
	apart time.Duration
}

// backendFor readies backend name for the test (an ensemble of its own
// for external), or skips the test saying why it cannot run here.
func backendFor(t *testing.T, name string, s settings) backend {
	t.Helper()
	netFaults := netns.Available() == nil
	switch name {
	case "local":
		f := []string{"pause-holder", "expire-holder", "kill-zk"}
		if !s.quick {
			f = append(f, "pause-zk")
		}
		if netFaults {
			f = append(f, "isolate-holder")
			if !s.quick {
				f = append(f, "partition-zk-leader")
			}
		}
		return backend{name: name, faults: f}
	case "docker":
		img := dockertest.Image(t)
		if !netFaults {
			t.Skip("docker backend: needs network namespaces (root, ip, iptables)")
		}
		return backend{name: name, args: []string{"--cluster", "docker", "--image", img, "--net", "netns"},
			faults: []string{"pause-zk", "kill-zk", "partition-zk-leader", "pause-holder", "isolate-holder", "expire-holder"},
			left:   dockertest.Left}
	case "external":
		addrs, conn := externalEnsemble(t)
		f := []string{"pause-holder", "expire-holder"}
		if netFaults {
			f = append(f, "isolate-holder")
		}
		return backend{name: name, args: []string{"--cluster", "external", "--zk", addrs}, faults: f,
			left: func(runID string) []string { return subtreeLeft(conn, runID) }}
	case "ssh":
		r := chaostest.NewSSHRig(t)
		return backend{name: name, args: r.Args(), apart: cleanBound, left: r.LeftOnHosts,
			faults: []string{"pause-zk", "kill-zk", "partition-zk-leader", "pause-holder", "isolate-holder", "expire-holder"}}
	}
	t.Fatalf("ZKCHAOS_DEATH_BACKENDS: unknown backend %q (local, docker, external, ssh)", name)
	return backend{}
}

// externalEnsemble starts three servers on 127.0.0.1 for the external
// backend's runs, as tests/external does, and a session to look at
// their data; both go when the test ends.
func externalEnsemble(t *testing.T) (string, *zk.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := local.Launch(ctx, local.Config{Nodes: 3, Dir: filepath.Join(t.TempDir(), "zk"),
		MaxSessionTimeout: 10 * time.Second, Env: proc.Env("test-deaths-external", proc.Self())})
	if err != nil {
		t.Fatalf("start the test's ensemble: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("stop the test's ensemble: %v", err)
		}
	})
	conn, _, err := zk.Connect(strings.Split(c.ConnectString(), ","), 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return c.ConnectString(), conn
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// subtreeLeft reports the run's subtree on the test's ensemble, if it
// is still there.
func subtreeLeft(conn *zk.Conn, runID string) []string {
	root := external.RunRoot(runID)
	ok, _, err := conn.Exists(root)
	switch {
	case err != nil && !errors.Is(err, zk.ErrNoNode):
		return []string{"subtree " + root + ": " + err.Error()}
	case ok:
		return []string{"subtree " + root + " still on the ensemble"}
	}
	return nil
}
