// Package engine connects to the Docker engine through testcontainers-go's
// client, the one way the docker backend and the image builder reach it.
//
// testcontainers-go starts a "Ryuk" reaper container to remove what a test
// left behind; Ryuk would need an image pull, and pulls are never made
// here, so it is disabled: the run's containers and network carry the run
// id as a label, and the backend's Cleanup (used by the janitor and chaos
// cleanup) removes them instead.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// RyukEnv is the variable testcontainers-go reads to skip its reaper.
const RyukEnv = "TESTCONTAINERS_RYUK_DISABLED"

// pingTimeout bounds the first contact when ctx has no deadline: an engine
// that does not answer within it is as good as absent. The first contact
// is four requests; 5 s was too little for them on a loaded machine whose
// engine was busy with another test's containers.
const pingTimeout = 15 * time.Second

// ErrNoEngine is wrapped by Connect's error when no engine answers, so
// callers (tests, flag validation) can tell "no Docker here" from a
// failure of an engine that exists.
var ErrNoEngine = errors.New("no Docker engine reachable")

// Connect disables the reaper for this process, then returns a client
// whose API version is negotiated down to the engine's (1.41 for Debian's
// docker.io 20.10) and that has answered a ping.
func Connect(ctx context.Context) (*testcontainers.DockerClient, error) {
	// testcontainers-go reads its configuration once per process, so this
	// must happen before its first call, which is here.
	if err := os.Setenv(RyukEnv, "true"); err != nil {
		return nil, fmt.Errorf("set %s: %w", RyukEnv, err)
	}
	tclog.SetDefault(debugLog{})
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	cli, err := newClient(pctx)
	if err != nil {
		return nil, fmt.Errorf("%w (is dockerd running? DOCKER_HOST=%q): %w", ErrNoEngine, os.Getenv("DOCKER_HOST"), err)
	}
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w (is dockerd running? DOCKER_HOST=%q): %w", ErrNoEngine, os.Getenv("DOCKER_HOST"), err)
	}
	return cli, nil
}

// newClient is testcontainers-go's constructor with its panics made
// errors. Its first call in a process asks the engine for its info three
// times, and where the third fails (the context ends first, as on a
// loaded machine with a busy engine) its Must* helpers panic. That killed
// a local run at its start, in the sweep of leftover containers.
func newClient(ctx context.Context) (cli *testcontainers.DockerClient, err error) {
	defer func() {
		if r := recover(); r != nil {
			cli, err = nil, fmt.Errorf("testcontainers-go panicked while finding the engine: %v", r)
		}
	}()
	return testcontainers.NewDockerClientWithOpts(ctx)
}

// debugLog sends testcontainers-go's chatter (it prints the engine's
// details on every connection) to slog's debug level instead of stderr.
type debugLog struct{}

func (debugLog) Printf(format string, v ...any) {
	slog.Debug(fmt.Sprintf(format, v...), "component", "testcontainers")
}

// Available reports whether an engine answers (nil), for callers that
// only decide whether to use Docker at all (test-all's docker cells).
func Available(ctx context.Context) error {
	cli, err := Connect(ctx)
	if err != nil {
		return err
	}
	return cli.Close()
}
