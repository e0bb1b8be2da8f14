package backend

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/docker"
	"github.com/zkchaos/zkchaos/cluster/docker/engine"
	"github.com/zkchaos/zkchaos/cluster/docker/image"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Docker runs each server in a container of the image `chaos image
// build` makes, on a Docker network of the run.
const Docker = "docker"

type dockerBackend struct{}

func init() { Register(dockerBackend{}, 1) }

func (dockerBackend) Name() string                           { return Docker }
func (dockerBackend) OnThisMachine() bool                    { return true }
func (dockerBackend) Capabilities(bool) cluster.Capabilities { return docker.Capabilities() }
func (dockerBackend) takesImage()                            {}

// RunsService: the image is ZooKeeper's.
func (dockerBackend) RunsService(service string) bool { return service == ZooKeeper }

// Available asks whether a Docker engine answers.
func (dockerBackend) Available(ctx context.Context) error {
	if err := engine.Available(ctx); err != nil {
		return fmt.Errorf("no Docker engine on this machine: %w", err)
	}
	return nil
}

// Validate refuses loopback mode: the run's processes join the Docker
// network's bridge from namespaces of their own.
func (dockerBackend) Validate(netMode string) error {
	if netMode != "netns" {
		return fmt.Errorf("%s needs %s netns (root and network namespaces): the workers and the register join the Docker network's bridge in namespaces of their own, which is also where the client faults act; this run's network mode is %s",
			Docker, setting.Name("Net"), netMode)
	}
	return nil
}

// Preflight checks for an engine that answers and the server image: tag,
// or by default the one `chaos image build` makes, which is built here
// (offline, once per machine; about a minute) when missing unless
// noBuild. Another tag is never built nor pulled.
func (dockerBackend) Preflight(ctx context.Context, tag string, noBuild bool, log *slog.Logger) error {
	cli, err := engine.Connect(ctx)
	if err != nil {
		return setting.Err("Cluster", Docker, err)
	}
	defer cli.Close()
	spec, err := image.Detect(ctx)
	if err != nil {
		return setting.Err("Cluster", Docker, err)
	}
	if tag == "" {
		tag = spec.Tag()
	}
	if _, _, found, err := image.Lookup(ctx, cli, tag); err != nil {
		return setting.Err("Cluster", Docker, err)
	} else if found {
		return nil
	}
	switch {
	case tag != spec.Tag():
		return setting.Errorf("Image", tag, "no such image on this engine (images are never pulled; `chaos image build` makes %s)", spec.Tag())
	case noBuild:
		return setting.Errorf("Cluster", Docker, "image %s not found and %s given: build it with `chaos image build` (images are never pulled)", tag, setting.Name("NoBuild"))
	}
	log.Info("docker image missing: building it once for this machine (offline, about a minute)", "tag", tag)
	res, err := image.Build(ctx, cli, image.Options{Logger: log})
	if err != nil {
		return setting.Err("Cluster", Docker, fmt.Errorf("build image %s: %w", spec.Tag(), err))
	}
	log.Info("docker image built", "tag", res.Tag, "took", res.Took.Round(time.Second).String(), "mb", res.Size/1e6)
	return nil
}

// Open creates the Docker network and the containers, then attaches the
// run's own network to the same bridge, so workers reach the servers and
// client faults act in the workers' namespaces as on local.
func (dockerBackend) Open(ctx context.Context, e *Ensemble, o Options) error {
	c, err := docker.New(ctx, docker.Config{Nodes: o.Nodes, Dir: o.Dir, RunID: o.RunID, Owners: o.Owners,
		Image: o.Image, TickTime: o.TickTime, MaxSessionTimeout: o.MaxSessionTimeout, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("prepare ensemble: %w", err)
	}
	e.Cluster, e.netFirst = c, true
	nw := c.Network()
	n, err := netns.Attach(ctx, o.RunID, o.Owners, nw.Slot, nw.Bridge, docker.FirstHost, o.Logger)
	if err != nil {
		return fmt.Errorf("attach run network to docker network %s: %w", nw.Name, err)
	}
	e.Net = n
	return nil
}
