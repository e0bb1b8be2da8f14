package external

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/client/recipes"
)

// removeTimeout bounds the removal of a run's subtree.
const removeTimeout = 20 * time.Second

// RemoveTree deletes root and everything beneath it, children first, on
// the ensemble at connect (comma-separated), as auth (the run's identity,
// so its protected nodes can go too), and returns how many znodes it
// deleted. It is the one removal of a run's subtree: the controller's at
// the end of every run, the janitor's after a controller died. Ephemeral
// nodes of sessions not yet expired are deleted like the others; a node
// added meanwhile makes a pass fail "not empty" and the next one start
// over (three passes). RootBase itself stays: another run may be about to
// add its subtree to it.
func RemoveTree(ctx context.Context, connect, root string, auth recipes.Auth) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, removeTimeout)
	defer cancel()
	conn, _, err := zk.Connect(strings.Split(connect, ","), 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		return 0, fmt.Errorf("remove %s: connect: %w", root, err)
	}
	defer conn.Close()
	// go-zookeeper takes no context: closing the connection is what ends
	// every call still waiting when ctx does.
	stop := context.AfterFunc(ctx, conn.Close)
	defer stop()
	if err := auth.Authenticate(ctx, conn); err != nil {
		return 0, fmt.Errorf("remove %s: %w", root, err)
	}
	total := 0
	for pass := 1; ; pass++ {
		n, err := deleteTree(conn, root)
		total += n
		if err == nil {
			return total, nil
		}
		if !errors.Is(err, zk.ErrNotEmpty) || pass == 3 || ctx.Err() != nil {
			return total, fmt.Errorf("remove %s (left on the ensemble: zkCli.sh -server %s deleteall %s, as the run's identity or a super user): %w",
				root, connect, root, err)
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

// quiet drops go-zookeeper's connection chatter.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
