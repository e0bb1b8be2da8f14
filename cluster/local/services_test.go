package local

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/host/proc"
)

// TestServicePrograms starts each other lock service's servers on
// loopback, waits for them to be whole, and checks that a kill is seen by
// the service's own probe and a restart on the same data serves again.
func TestServicePrograms(t *testing.T) {
	for _, p := range []Program{Redis{}, Etcd{}} {
		t.Run(p.Name(), func(t *testing.T) {
			if err := p.Check(); err != nil {
				t.Skipf("no %s: %v", p.Name(), err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			run := fmt.Sprintf("test-%s-%d", p.Name(), os.Getpid())
			c, err := Launch(ctx, Config{Nodes: 3, Dir: t.TempDir(), Program: p, Env: proc.Env(run, proc.Self()), Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := c.Close(context.Background()); err != nil {
					t.Errorf("close: %v", err)
				}
				if left, _ := proc.FindTagged(run); len(left) > 0 {
					t.Errorf("processes left: %v", left)
				}
			})
			if tagged, err := proc.FindTagged(run); err != nil || len(tagged) != 3 {
				t.Errorf("FindTagged = %v, %v; want 3 servers", tagged, err)
			}
			n := c.Node(2)
			v, err := n.Kill(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("kill: %s", v)
			if _, err := n.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := cluster.WaitServing(ctx, n); err != nil {
				t.Fatal(err)
			}
			if _, err := n.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			if _, err := n.Status(pctx); err == nil {
				t.Errorf("a paused %s server answered its probe", p.Name())
			}
			pcancel()
			if _, err := n.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
