package main

import (
	"os/exec"
	"strings"
	"testing"
)

// controllerOnly are import paths the worker must not link: the
// controller's folders and their heavy dependencies, and the other
// services' recipes with their clients (chaos-worker-services has them).
// Each one's package initialisation would be paid again by every worker a
// run starts (docs/measurements.md, "Worker start").
var controllerOnly = []string{
	"github.com/zkchaos/zkchaos/run/", "github.com/zkchaos/zkchaos/report", "github.com/zkchaos/zkchaos/observe/",
	"github.com/zkchaos/zkchaos/workloads", "github.com/zkchaos/zkchaos/checker", "github.com/zkchaos/zkchaos/nemesis",
	"github.com/zkchaos/zkchaos/cluster", "github.com/zkchaos/zkchaos/history/store",
	"github.com/testcontainers/", "github.com/docker/", "github.com/prometheus/", "github.com/spf13/cobra",
	"gonum.org/", "encoding/gob",
	"github.com/zkchaos/zkchaos/client/recipes/leased", "go.etcd.io/", "google.golang.org/grpc", "github.com/redis/",
}

// TestLinksNoControllerPackage lists what the worker links (go list
// -deps) and fails on any controller-only package.
func TestLinksNoControllerPackage(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/zkchaos/zkchaos/cmd/chaos-worker").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps gave %d packages: %q", len(deps), out)
	}
	for _, d := range deps {
		for _, bad := range controllerOnly {
			if strings.HasPrefix(d, bad) {
				t.Errorf("chaos-worker links %s (%s is the controller's)", d, bad)
			}
		}
	}
}
