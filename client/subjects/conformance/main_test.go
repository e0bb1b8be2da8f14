package conformance

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/resource/register"
)

// env is what TestMain set up for every test of the package.
var env struct {
	// skip says why the tests cannot run here ("" when they can).
	skip string
	// zk is the ensemble's connect string, zkIP its server's address (the
	// peer an isolation blocks), reg the register's base URL.
	zk, zkIP, reg string
	// net is the run's network in netns mode; nil in loopback mode, where
	// isolating a worker is impossible and those tests skip.
	net *netns.Network
	// chaos is the chaos binary built from this tree, the built-in
	// worker beside it.
	chaos string
	dir   string
	runID string
}

// The workers' ZooKeeper session timeouts. A test that waits for the
// server to expire a session asks for expiringSession, short so that the
// expiry comes within the test. Every other test asks for steadySession:
// with 2 s a client reading nothing for 1.3 s (its read timeout, two
// thirds of the session) drops the connection, and on a loaded machine a
// stalled JVM or client did that, so a session expired under a test that
// needs none to (a waiter's release answered revoked).
const (
	expiringSession = 2 * time.Second
	steadySession   = 10 * time.Second
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests starts one ZooKeeper server and one register for the package
// (a JVM takes seconds to start) and builds the chaos binary and the
// built-in worker. With root they live on a network of namespaces so a
// worker can be cut off from the server; without, on loopback.
func runTests(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		env.skip = "-short: no real processes"
		return m.Run()
	}
	if err := local.Available(); err != nil {
		env.skip = fmt.Sprintf("no ZooKeeper: %v", err)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "zkchaos-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	env.dir = dir
	env.runID = fmt.Sprintf("conformance-%d", os.Getpid())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	if env.chaos, err = chaostest.BuildInto(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv(sweepEnv) != "" {
		// The sweep runs whole `chaos run`s, each with its own ensemble.
		env.skip = sweepEnv + " is set: only the herd sweep runs"
		return m.Run()
	}
	if netns.Available() == nil {
		n, err := netns.Create(ctx, env.runID, proc.Self(), slog.New(slog.DiscardHandler))
		if err != nil {
			fmt.Fprintln(os.Stderr, "network:", err)
			return 1
		}
		env.net = n
		defer func() {
			if err := n.Close(context.Background()); err != nil {
				fmt.Fprintln(os.Stderr, "close network:", err)
			}
		}()
	}
	sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
	defer scancel()
	c, err := local.Launch(sctx, local.Config{Nodes: 1, Dir: filepath.Join(dir, "zk"), MaxSessionTimeout: steadySession, Network: env.net, Env: proc.Env(env.runID, proc.Self())})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ensemble:", err)
		return 1
	}
	defer func() {
		if err := c.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "close ensemble:", err)
		}
	}()
	env.zk = c.ConnectString()
	env.zkIP = c.Node(1).IP()

	served, err := startRegister(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "register:", err)
		return 1
	}
	code := m.Run()
	cancel()
	<-served
	return code
}

// regSecret is the register's secret: every worker under test must
// present it, as in a real run (docs/worker-protocol.md, "Credentials").
const regSecret = "conformance-secret"

// startRegister serves the register in this process, on the bridge's
// address in netns mode (every namespace routes to it) or on loopback.
func startRegister(ctx context.Context, dir string) (<-chan error, error) {
	listen := "127.0.0.1:0"
	if env.net != nil {
		listen = env.net.Gateway + ":0"
	}
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- register.Serve(ctx, register.Config{Listen: listen, LogPath: filepath.Join(dir, "apply.log"),
			Mode: register.ModeOn, Secret: regSecret, Logger: slog.New(slog.DiscardHandler)}, func(a string) { ready <- a })
	}()
	select {
	case a := <-ready:
		env.reg = "http://" + a
		return served, nil
	case err := <-served:
		return nil, err
	}
}

func needEnv(t *testing.T) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
}
