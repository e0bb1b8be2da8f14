// Package dockertest is chaostest for the tests of the docker backend:
// whether they can run here, the server image, and what the engine still
// has of a run. It is a package of its own so that the test binaries of
// the other packages do not link the Docker client.
package dockertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster/docker"
	"github.com/zkchaos/zkchaos/cluster/docker/engine"
	"github.com/zkchaos/zkchaos/cluster/docker/image"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// Need is chaostest.NeedNetns for a test of the docker backend: it skips,
// saying why, where no Docker engine answers or the server image is not
// built (make test builds it once per machine: `chaos image build`).
func Need(t *testing.T) {
	t.Helper()
	chaostest.NeedNetns(t)
	Image(t)
}

// Image is the tag of this machine's server image; it skips the
// test, saying why, where no Docker engine answers or the image is not
// built. It takes no run token (Need does).
func Image(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("docker test (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := engine.Connect(ctx)
	if err != nil {
		t.Skipf("docker backend: %v", err)
	}
	defer cli.Close()
	spec, err := image.Detect(ctx)
	if err != nil {
		t.Skipf("docker backend: %v", err)
	}
	if _, _, found, err := image.Lookup(ctx, cli, spec.Tag()); err != nil || !found {
		t.Skipf("docker backend: image %s not built (%v): run `chaos image build` (make test does)", spec.Tag(), err)
	}
	return spec.Tag()
}

// AssertNoneLeft checks that the engine has no container or network
// labelled with run runID.
func AssertNoneLeft(t *testing.T, runID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runs, err := docker.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.ID == runID {
			t.Errorf("docker leftovers of run %s: containers [%s], networks [%s]", runID,
				strings.Join(r.Containers, ", "), strings.Join(r.Networks, ", "))
		}
	}
}

// WaitNoneLeft waits until nothing of the run in dir is left, neither
// on this machine (chaostest.AssertNothingLeft's view) nor on the Docker engine,
// or until bound has passed, and returns how long it waited. It judges
// nothing: the asserts after it do, and say what is left.
func WaitNoneLeft(t *testing.T, dir string, bound time.Duration) time.Duration {
	t.Helper()
	runID, slot := chaostest.ReadTest(t, dir).RunID, chaostest.RunSlot(dir)
	start := time.Now()
	for time.Since(start) < bound {
		left, err := chaostest.Leftovers(runID, slot)
		if err == nil && len(left) == 0 && !dockerHas(runID) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// dockerHas is whether the engine (if one answers) has anything
// labelled with run runID; an engine that does not answer the listing
// counts as having it, so a wait does not end on an error.
func dockerHas(runID string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runs, err := docker.Runs(ctx)
	if err != nil {
		return true
	}
	for _, r := range runs {
		if r.ID == runID {
			return true
		}
	}
	return false
}

// Left lists what the Docker engine still has of run runID
// (containers, networks), for chaostest.AwaitClean; an engine that does not answer
// is reported, so that a wait does not end clean on an error.
func Left(runID string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runs, err := docker.Runs(ctx)
	if err != nil {
		return []string{"docker engine: " + err.Error()}
	}
	for _, r := range runs {
		if r.ID == runID {
			return []string{fmt.Sprintf("docker leftovers of run %s: containers [%s], networks [%s]", runID,
				strings.Join(r.Containers, ", "), strings.Join(r.Networks, ", "))}
		}
	}
	return nil
}
