package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/zkchaos/zkchaos/cluster/docker/engine"
	"github.com/zkchaos/zkchaos/host/proc"
)

// Run is one run's containers and networks, found by label.
type Run struct {
	ID         string
	Owners     proc.Owners
	Containers []string // names
	Networks   []string // names
}

// Sweeper removes runs' containers and networks by label, in the steps a
// sweep of the whole run needs: the containers first, then whatever the
// caller attached to the network (netns namespaces), then the network. The
// network goes last so that its subnet, which is also a netns slot, is not
// given to another run while the attached namespaces still exist.
type Sweeper struct {
	cli *testcontainers.DockerClient
}

// NewSweeper connects to the engine; its error wraps engine.ErrNoEngine
// when none answers, which callers treat as nothing to remove.
func NewSweeper(ctx context.Context) (*Sweeper, error) {
	cli, err := engine.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker sweep: %w", err)
	}
	return &Sweeper{cli: cli}, nil
}

// Close closes the connection.
func (s *Sweeper) Close() error { return s.cli.Close() }

// Runs lists every run that has containers or networks on the engine, for
// a sweep that decides which are leftovers (controller dead).
func (s *Sweeper) Runs(ctx context.Context) ([]Run, error) { return runs(ctx, s.cli, "") }

// Runs lists every labelled run; no engine here means no runs.
func Runs(ctx context.Context) ([]Run, error) {
	s, err := NewSweeper(ctx)
	if errors.Is(err, engine.ErrNoEngine) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Runs(ctx)
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
			r = &Run{ID: id, Owners: ownersOf(labels)}
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

// ownersOf reads a run's owners from its labels; labels of versions
// before LabelOwners name the controller's PID alone.
func ownersOf(labels map[string]string) proc.Owners {
	o := proc.ParseOwners(labels[LabelOwners])
	if o.Controller.PID == 0 {
		o.Controller.PID, _ = strconv.Atoi(labels[LabelController])
	}
	return o
}

func containerName(names []string, id string) string {
	if len(names) > 0 && len(names[0]) > 1 {
		return names[0][1:] // the engine prefixes a slash
	}
	return id
}

// Cleanup removes everything of a run the engine has, however the run
// ended: its containers (RemoveContainers), then its network. It returns
// one line per thing removed. No engine here means nothing to remove.
func Cleanup(ctx context.Context, runID string) ([]string, error) {
	if runID == "" {
		return nil, errors.New("docker cleanup: empty run id")
	}
	s, err := NewSweeper(ctx)
	if errors.Is(err, engine.ErrNoEngine) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("docker cleanup of run %s: %w", runID, err)
	}
	defer s.Close()
	did, cerr := s.RemoveContainers(ctx, runID)
	more, nerr := s.RemoveNetworks(ctx, runID)
	return append(did, more...), errors.Join(cerr, nerr)
}

// RemoveContainers removes the run's containers: each is continued (a
// SIGSTOPped JVM), its log copied to the path its label names when that
// folder still exists, and removed with its volumes. One line per
// container removed.
func (s *Sweeper) RemoveContainers(ctx context.Context, runID string) ([]string, error) {
	if runID == "" {
		return nil, errors.New("docker cleanup: empty run id")
	}
	cs, err := s.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: runFilter(runID)})
	if err != nil {
		return nil, fmt.Errorf("docker cleanup of run %s: list containers: %w", runID, err)
	}
	// All at once: each removal waits on the engine (stop, log copy,
	// delete), and the janitor's sweep after a controller's death is only
	// as fast as the slowest container, not the sum of them.
	lines := make([]string, len(cs.Items))
	errs := make([]error, len(cs.Items))
	var wg sync.WaitGroup
	for i, c := range cs.Items {
		wg.Go(func() {
			lines[i], errs[i] = s.removeContainer(ctx, c.ID, containerName(c.Names, c.ID), c.State == "running", c.Labels[LabelLog])
		})
	}
	wg.Wait()
	var did []string
	for _, l := range lines {
		if l != "" {
			did = append(did, l)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return did, fmt.Errorf("docker cleanup of run %s: %w", runID, err)
	}
	return did, nil
}

// removeContainer continues, copies the log of and removes one container;
// line is "" when it was not removed.
func (s *Sweeper) removeContainer(ctx context.Context, id, name string, running bool, logPath string) (line string, err error) {
	line = "removed container " + name
	if running {
		_, _ = s.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "CONT"})
	}
	if logPath != "" {
		if _, serr := os.Stat(filepath.Dir(logPath)); serr == nil {
			if err = copyLog(ctx, s.cli, id, logPath); err == nil {
				line += " (log copied to " + logPath + ")"
			}
		}
	}
	if _, rerr := s.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && !errdefs.IsNotFound(rerr) {
		return "", errors.Join(err, fmt.Errorf("remove container %s: %w", name, rerr))
	}
	return line, err
}

// RemoveNetworks removes the run's networks (after its containers, and
// after the namespaces attached to them). One line per network removed.
func (s *Sweeper) RemoveNetworks(ctx context.Context, runID string) ([]string, error) {
	if runID == "" {
		return nil, errors.New("docker cleanup: empty run id")
	}
	ns, err := s.cli.NetworkList(ctx, client.NetworkListOptions{Filters: runFilter(runID)})
	if err != nil {
		return nil, fmt.Errorf("docker cleanup of run %s: list networks: %w", runID, err)
	}
	var did []string
	var errs []error
	for _, n := range ns.Items {
		if err := removeNetwork(ctx, s.cli, n.ID); err != nil {
			errs = append(errs, err)
		} else {
			did = append(did, "removed network "+n.Name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return did, fmt.Errorf("docker cleanup of run %s: %w", runID, err)
	}
	return did, nil
}

func runFilter(runID string) client.Filters {
	return client.Filters{}.Add("label", LabelRun+"="+runID)
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
