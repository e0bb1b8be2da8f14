package runner

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
	"github.com/zkchaos/zkchaos/run/janitor"
	"github.com/zkchaos/zkchaos/workloads"
)

// tellings records what the janitor would be told.
type tellings struct{ msgs []janitor.Message }

func (t *tellings) Tell(m janitor.Message) error { t.msgs = append(t.msgs, m); return nil }

// Owners: this test process, with no janitor.
func (t *tellings) Owners() proc.Owners { return proc.Self() }

// TestNetworkAndServices: on loopback, the network part opens a
// one-server local ensemble (no slot to tell the janitor); the services
// start the real register and the ensemble, protect the election's
// znodes and fill its task table through the register; stopping them
// stops the register, and closing the network stops the ensemble.
func TestNetworkAndServices(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper")
	}
	if err := local.Available(); err != nil {
		t.Skipf("no ZooKeeper: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cfg := Defaults()
	cfg.Workload, cfg.Nodes, cfg.Net, cfg.Tasks = workloads.ElectionName, 1, "loopback", 5
	wl, err := cfg.NewWorkload()
	if err != nil {
		t.Fatal(err)
	}
	run, err := store.Create(t.TempDir(), "services", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	log, jan := testlog.Logger(t), &tellings{}
	env := append(proc.Env("test-runner-services", proc.Self()), envRegister+"=1")
	n, err := openNetwork(ctx, cfg, run, "test-runner-services", env, jan, log)
	t.Cleanup(func() { _ = n.close(context.Background()) })
	if err != nil {
		t.Fatal(err)
	}
	if n.mode != "loopback" || n.net != nil || len(jan.msgs) != 0 || n.nodes(cfg) != 1 {
		t.Fatalf("loopback network: mode %s, net %v, janitor told %v", n.mode, n.net, jan.msgs)
	}
	s := newServices(cfg, os.Args[0], env, run, n, jan, log)
	if err := s.start(ctx, wl); err != nil {
		t.Fatal(err)
	}
	if s.reg == nil || s.resource() != s.reg || !s.sec.zk.Enabled() || s.ready <= 0 {
		t.Fatalf("services: register %v, zk auth %v, ready %s", s.reg, s.sec.zk.Enabled(), s.ready)
	}
	if w := s.where(); w.ZK != n.zk.ConnectString() || w.Register != s.reg.url() || w.Postgres != "" {
		t.Errorf("where: %+v", w)
	}
	scan, err := s.reg.client(5*time.Second).Scan(ctx, workloads.Service)
	if err != nil || len(scan.Tasks) != 5 {
		t.Errorf("task table after Prepare: %d tasks, %v", len(scan.Tasks), err)
	}
	conn, _, err := zk.Connect([]string{n.zk.ConnectString()}, 5*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Delete(recipes.ElectionRoot+"/"+workloads.Service, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("an anonymous client deleting the election's node: %v, want no auth", err)
	}

	if errs := s.stop(ctx); len(errs) != 0 {
		t.Fatalf("stop: %v", errs)
	}
	select {
	case <-s.reg.exited():
	case <-time.After(10 * time.Second):
		t.Fatal("register still running after stop")
	}
	if !s.reg.isStopping() {
		t.Error("the register's exit is not known as expected")
	}
	if err := n.close(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	defer wcancel()
	if err := n.zk.WaitReady(wctx); err == nil {
		t.Error("ensemble still serving after close")
	}
}

// TestValidateParts: each part refuses its own settings.
func TestValidateParts(t *testing.T) {
	c := Defaults()
	c.Workers, c.Nodes, c.Net, c.NemesisInterval, c.MonitorInterval, c.CheckBudget = 0, 0, "wifi", 0, time.Millisecond, -1
	for name, errs := range map[string][]error{"fleet": validateFleet(c), "services": validateServices(c),
		"faults": validateFaults(c, false), "observers": validateObservers(c), "check": validateCheck(c), "folder": validateFolder(c)} {
		want := map[string]string{"fleet": "workers 0", "services": "nodes 0", "faults": "nemesis interval 0s",
			"observers": "monitor interval 1ms", "check": "check budget -1ns", "folder": ""}[name]
		if want == "" {
			if len(errs) != 0 {
				t.Errorf("%s: %v, want none", name, errs)
			}
			continue
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), want) {
			t.Errorf("%s: %v, want one error naming %q", name, errs, want)
		}
	}
	errs, capsKnown := validateNetwork(c)
	if capsKnown || len(errs) != 1 || !strings.Contains(errs[0].Error(), `net "wifi"`) {
		t.Errorf("network: %v (caps known %v)", errs, capsKnown)
	}
}
