package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/zkchaos/zkchaos/cluster/docker/engine"
)

// Run is one run's containers and networks, found by label.
type Run struct {
	ID            string
	ControllerPID int
	Containers    []string // names
	Networks      []string // names
}

// Runs lists every run that has containers or networks on the engine, for
// a sweep that decides which are leftovers (controller dead). No engine
// here means no runs.
func Runs(ctx context.Context) ([]Run, error) {
	cli, err := engine.Connect(ctx)
	if errors.Is(err, engine.ErrNoEngine) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	return runs(ctx, cli, "")
}

func runs(ctx context.Context, cli *testcontainers.DockerClient, runID string) ([]Run, error) {
	f := client.Filters{}
	if runID == "" {
		f = f.Add("label", LabelRun)
	} else {
		f = f.Add("label", LabelRun+"="+runID)
	}
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	byID := map[string]*Run{}
	get := func(labels map[string]string) *Run {
		id := labels[LabelRun]
		r := byID[id]
		if r == nil {
			pid, _ := strconv.Atoi(labels[LabelController])
			r = &Run{ID: id, ControllerPID: pid}
			byID[id] = r
		}
		return r
	}
	for _, c := range cs.Items {
		r := get(c.Labels)
		r.Containers = append(r.Containers, containerName(c.Names, c.ID))
	}
	for _, n := range ns.Items {
		r := get(n.Labels)
		r.Networks = append(r.Networks, n.Name)
	}
	out := make([]Run, 0, len(byID))
	for _, r := range byID {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func containerName(names []string, id string) string {
	if len(names) > 0 && len(names[0]) > 1 {
		return names[0][1:] // the engine prefixes a slash
	}
	return id
}

// Cleanup removes everything of a run the engine has, however the run
// ended: each container is continued (a SIGSTOPped JVM), its log copied
// to the path its label names when that folder still exists, and removed;
// then the network. It returns one line per thing removed. No engine here
// means nothing to remove.
func Cleanup(ctx context.Context, runID string) ([]string, error) {
	if runID == "" {
		return nil, errors.New("docker cleanup: empty run id")
	}
	cli, err := engine.Connect(ctx)
	if errors.Is(err, engine.ErrNoEngine) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("docker cleanup of run %s: %w", runID, err)
	}
	defer cli.Close()
	f := client.Filters{}.Add("label", LabelRun+"="+runID)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("docker cleanup of run %s: list containers: %w", runID, err)
	}
	var did []string
	var errs []error
	for _, c := range cs.Items {
		name := containerName(c.Names, c.ID)
		line := "removed container " + name
		if c.State == "running" {
			_, _ = cli.ContainerKill(ctx, c.ID, client.ContainerKillOptions{Signal: "CONT"})
		}
		if p := c.Labels[LabelLog]; p != "" {
			if _, err := os.Stat(filepath.Dir(p)); err == nil {
				if err := copyLog(ctx, cli, c.ID, p); err != nil {
					errs = append(errs, err)
				} else {
					line += " (log copied to " + p + ")"
				}
			}
		}
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", name, err))
			continue
		}
		did = append(did, line)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("list networks: %w", err))
	} else {
		for _, n := range ns.Items {
			if err := removeNetwork(ctx, cli, n.ID); err != nil {
				errs = append(errs, err)
			} else {
				did = append(did, "removed network "+n.Name)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return did, fmt.Errorf("docker cleanup of run %s: %w", runID, err)
	}
	return did, nil
}

// removeNetwork removes a network; one already gone is fine.
func removeNetwork(ctx context.Context, cli *testcontainers.DockerClient, id string) error {
	if _, err := cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{}); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove network %s: %w", id, err)
	}
	return nil
}

// copyLog writes a container's whole output (the engine keeps it across
// restarts) to path, replacing it through a rename so that a reader never
// sees half a copy.
func copyLog(ctx context.Context, cli *testcontainers.DockerClient, id, path string) error {
	rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("logs of container %s: %w", id, err)
	}
	defer rc.Close()
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("copy log: %w", err)
	}
	// No TTY: the stream is multiplexed, stdout and stderr frames.
	if _, err := stdcopy.StdCopy(f, f, rc); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("copy log of container %s: %w", id, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("copy log: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("copy log: %w", err)
	}
	return nil
}
