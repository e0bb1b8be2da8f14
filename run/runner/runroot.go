package runner

import (
	"context"
	"log/slog"
	"strings"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/cluster/backend"
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

// removeRunRoot deletes the run's subtree (Config.RunRoot), as the run's
// identity, through the ensemble's addresses as the controller reaches
// them.
func removeRunRoot(ctx context.Context, connect, root string, auth recipes.Auth, log *slog.Logger) error {
	if root == "" {
		return nil
	}
	n, err := backend.RemoveRunRoot(ctx, connect, root, auth)
	if err != nil {
		return err
	}
	log.Info("run's znodes removed", "root", root, "znodes", n)
	return nil
}
