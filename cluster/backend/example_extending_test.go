package backend

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// This file is the backend example of docs/extending.md, quoted there
// verbatim (docs/extending_test.go keeps the two identical). A real
// backend is the same code in a file of its own, without the test.

// ExampleLoopback is the example's --cluster value.
const ExampleLoopback = "example-loopback"

// exampleLoopback runs ZooKeeper servers as processes on 127.0.0.1 only:
// the local backend without network namespaces.
type exampleLoopback struct{}

// init registers the backend; 100 places it after the built-in ones in
// the help and in the errors.
func init() { Register(exampleLoopback{}, 100) }

func (exampleLoopback) Name() string        { return ExampleLoopback }
func (exampleLoopback) OnThisMachine() bool { return true }

// Validate refuses, by name alone, a run this backend cannot make.
func (exampleLoopback) Validate(netMode string) error {
	if netMode != "loopback" {
		return fmt.Errorf("%s runs its servers on 127.0.0.1 only: give %s loopback (this run's network mode is %s)",
			ExampleLoopback, setting.Name("Net"), netMode)
	}
	return nil
}

// Capabilities are the local backend's without namespaces: no
// partitions, so the partition faults are refused before the run.
func (exampleLoopback) Capabilities(bool) cluster.Capabilities {
	cs := local.Capabilities(false)
	cs.Backend = ExampleLoopback
	return cs
}

// RunsService: ZooKeeper's servers only.
func (exampleLoopback) RunsService(service string) bool { return service == ZooKeeper }

// Open writes the servers' configuration; nothing runs until the runner
// starts the cluster, and there is no network for the run to join.
func (exampleLoopback) Open(ctx context.Context, e *Ensemble, o Options) error {
	c, err := local.New(ctx, local.Config{Nodes: o.Nodes, Dir: o.Dir, TickTime: o.TickTime,
		MaxSessionTimeout: o.MaxSessionTimeout, Env: o.Env, Program: local.ZooKeeper{}, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("prepare ensemble: %w", err)
	}
	e.Cluster = c
	return nil
}

// TestExampleLoopback: the backend is found by name, refuses what its
// Validate, Capabilities and RunsService say, and opens an ensemble.
func TestExampleLoopback(t *testing.T) {
	if b, err := Lookup(ExampleLoopback); err != nil || b.Name() != ExampleLoopback {
		t.Fatalf("Lookup: %v, %v", b, err)
	}
	if err := Validate(ExampleLoopback, "netns"); err == nil {
		t.Error("a netns run accepted")
	}
	if err := Validate(ExampleLoopback, "loopback"); err != nil {
		t.Errorf("a loopback run refused: %v", err)
	}
	if err := ValidateService(Redis, ExampleLoopback); err == nil {
		t.Error("redis accepted")
	}
	if err := Capabilities(ExampleLoopback, true).Need(cluster.CanPartition); err == nil {
		t.Error("partitions offered on 127.0.0.1")
	}
	e, err := Open(context.Background(), ExampleLoopback, Options{Nodes: 3, Dir: t.TempDir(), NetMode: "loopback"})
	if err != nil {
		t.Fatal(errors.Join(err, e.Close(context.Background())))
	}
	if n := len(e.Cluster.Nodes()); n != 3 {
		t.Errorf("%d servers, want 3", n)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Error(err)
	}
}
