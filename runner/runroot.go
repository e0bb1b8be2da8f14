package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/recipes"
	"github.com/zkchaos/zkchaos/workloads"
)

// A run on an ensemble it does not own (--cluster external) keeps every
// znode it makes under its own subtree, Config.RunRoot
// (/zkchaos/<run id>), and removes that subtree, and only it, at its end,
// whatever ended the run. The subtree's root and its parents are
// world-open (any run may add its own beside, and anyone may remove an
// empty one); the lock root and the keys beneath keep their --acl
// protection.

// splitRunRoot parts the workload's nodes into the run root and its
// parents (open) and the nodes beneath it (the rest); with no run root
// every node is the rest.
func splitRunRoot(nodes []workloads.Node, runRoot string) (open, rest []workloads.Node) {
	if runRoot == "" {
		return nil, nodes
	}
	for _, n := range nodes {
		if n.Path == runRoot || strings.HasPrefix(runRoot, n.Path+"/") {
			open = append(open, n)
		} else {
			rest = append(rest, n)
		}
	}
	return open, rest
}

// removeTimeout bounds the removal of a run's subtree.
const removeTimeout = 20 * time.Second

// removeRunRoot deletes the run's subtree, children first, on the
// ensemble at connect, as the run's identity (auth) so the protected
// nodes can go too. Ephemeral nodes of sessions not yet expired are
// deleted like the others; a node added meanwhile makes a pass fail
// "not empty" and the next one start over (three passes). RootBase
// itself stays: another run may be about to add its subtree to it.
func removeRunRoot(ctx context.Context, connect, root string, auth recipes.Auth, log *slog.Logger) error {
	if root == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, removeTimeout)
	defer cancel()
	conn, _, err := zk.Connect(strings.Split(connect, ","), 10*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		return fmt.Errorf("remove %s: connect: %w", root, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, conn.Close)
	defer stop()
	if auth.Enabled() {
		if err := auth.Authenticate(ctx, conn); err != nil {
			return fmt.Errorf("remove %s: %w", root, err)
		}
	}
	for pass := 1; ; pass++ {
		n, err := deleteTree(conn, root)
		if err == nil {
			log.Info("run's znodes removed", "root", root, "znodes", n)
			return nil
		}
		if !errors.Is(err, zk.ErrNotEmpty) || pass == 3 || ctx.Err() != nil {
			return fmt.Errorf("remove %s (left on the ensemble; remove it with zkCli.sh deleteall %s): %w", root, root, err)
		}
	}
}

// deleteTree deletes p and everything beneath it, children first, and
// returns how many znodes it deleted; a node already gone is fine.
func deleteTree(conn *zk.Conn, p string) (int, error) {
	children, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", p, err)
	}
	n := 0
	for _, c := range children {
		k, err := deleteTree(conn, path.Join(p, c))
		n += k
		if err != nil {
			return n, err
		}
	}
	if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return n, fmt.Errorf("delete %s: %w", p, err)
	}
	return n + 1, nil
}
