package compose

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/moby/moby/client"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/docker/engine"
	"github.com/zkchaos/zkchaos/cluster/docker/image"
)

// The servers' addresses in docker-compose.yml.
var servers = []string{"198.19.248.2:2181", "198.19.248.3:2181", "198.19.248.4:2181"}

// TestComposeEnsembleServes brings the compose file up under a project of
// its own, waits until one leader and two followers answer srvr, takes it
// down and checks that nothing of the project is left.
func TestComposeEnsembleServes(t *testing.T) {
	if testing.Short() {
		t.Skip("docker-compose test (-short)")
	}
	dc, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Skipf("compose file not tested: no docker-compose here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli, err := engine.Connect(ctx)
	if errors.Is(err, engine.ErrNoEngine) {
		t.Skipf("compose file not tested: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	res, err := image.Build(ctx, cli, image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	project := "zkchaos-compose-test-" + uuid.NewString()[:8]
	compose := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, dc, append([]string{"-p", project, "-f", File}, args...)...)
		cmd.Env = append(os.Environ(), "ZKCHAOS_IMAGE="+res.Tag)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	down := func() error {
		out, err := compose(context.Background(), "down", "--volumes", "--remove-orphans", "--timeout", "10")
		if err != nil {
			return fmt.Errorf("docker-compose down: %v: %s", err, out)
		}
		return nil
	}
	t.Cleanup(func() { _ = down() })
	start := time.Now()
	if out, err := compose(ctx, "up", "-d"); err != nil {
		t.Fatalf("docker-compose up: %v: %s", err, out)
	}
	f := client.Filters{}.Add("label", "com.docker.compose.project="+project)
	exited := func(ctx context.Context) (string, error) {
		cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f.Clone().Add("status", "exited")})
		if err != nil || len(cs.Items) == 0 {
			return "", err
		}
		return fmt.Sprintf("%d of the project's containers exited, %s first", len(cs.Items), strings.Join(cs.Items[0].Names, " ")), nil
	}
	if err := waitServing(ctx, exited); err != nil {
		logs, _ := compose(ctx, "logs", "--tail", "20")
		t.Logf("docker-compose logs:\n%s", logs)
		t.Fatal(err)
	}
	t.Logf("MEASURE compose up to serving: %s", time.Since(start).Round(time.Millisecond))

	if err := down(); err != nil {
		t.Fatal(err)
	}
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil || len(cs.Items) != 0 {
		t.Errorf("containers of %s left after down: %d, %v", project, len(cs.Items), err)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil || len(ns.Items) != 0 {
		t.Errorf("networks of %s left after down: %d, %v", project, len(ns.Items), err)
	}
	if err := exec.Command("ip", "link", "show", "zkd7").Run(); err == nil {
		t.Error("bridge zkd7 left after down")
	}
}

// waitServing polls srvr on every server until one leads and two follow.
// It gives up when a container has exited (restart "no": a server that
// failed stays down) or ctx ends, not after a fixed time: under the
// suite's load three JVMs can take more than a minute to elect and sync,
// and how long they take is not what this test is about.
func waitServing(ctx context.Context, exited func(context.Context) (string, error)) error {
	for {
		why, err := exited(ctx)
		if err != nil {
			return fmt.Errorf("compose ensemble: listing its containers: %w", err)
		}
		if why != "" {
			return fmt.Errorf("compose ensemble not serving: %s", why)
		}
		modes := make([]string, len(servers))
		leaders, followers := 0, 0
		for i, addr := range servers {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			out, err := cluster.FourLetter(sctx, addr, "srvr")
			cancel()
			st := cluster.ParseSrvr(out)
			switch {
			case err != nil:
				modes[i] = "no answer"
			case !st.Serving:
				modes[i] = "not serving"
			default:
				modes[i] = st.Mode
			}
			switch modes[i] {
			case "leader":
				leaders++
			case "follower":
				followers++
			}
		}
		if leaders == 1 && followers == 2 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("compose ensemble not serving: %s: %w", strings.Join(modes, ", "), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
