package engine

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// stalledEnv makes the test binary run the stalled-engine case in its own
// process: testcontainers-go discovers the engine once per process and
// keeps what it found, so only a fresh process takes the path that failed.
const stalledEnv = "ZKCHAOS_ENGINE_STALLED"

// TestConnectSurvivesAStalledDiscovery: testcontainers-go's first client
// in a process asks the engine for its info three times, and panics (its
// Must* helpers) where the third does not answer before the context ends.
// That killed a local run's start on a loaded machine, in its sweep of
// leftover containers. Against an engine that answers twice and then
// stalls, Connect must return an error that says no engine answered, not
// panic. The engine is a stub on a unix socket: no real engine can be
// made to stall at that one request.
func TestConnectSurvivesAStalledDiscovery(t *testing.T) {
	if os.Getenv(stalledEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestConnectSurvivesAStalledDiscovery$", "-test.v")
		cmd.Env = append(os.Environ(), stalledEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the stalled-engine case failed: %v\n%s", err, out)
		}
		t.Logf("%s", out)
		return
	}
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var infos atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			w.Header().Set("API-Version", "1.41")
			w.Header().Set("OSType", "linux")
			_, _ = w.Write([]byte("OK"))
		case strings.HasSuffix(r.URL.Path, "/info") && infos.Add(1) <= 2:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ID":"stub","ServerVersion":"20.10.0","OperatingSystem":"stub engine"}`))
		case strings.HasSuffix(r.URL.Path, "/info"):
			<-r.Context().Done() // the stall: no answer until the client gives up
		default:
			http.NotFound(w, r)
		}
	})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	t.Setenv("HOME", t.TempDir()) // no ~/.testcontainers.properties of this machine's

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cli, err := Connect(ctx)
	if err == nil {
		cli.Close()
		t.Fatalf("Connect succeeded against an engine that stalled (%d info requests)", infos.Load())
	}
	if !errors.Is(err, ErrNoEngine) {
		t.Fatalf("Connect: %v; want an error wrapping ErrNoEngine", err)
	}
	if n := infos.Load(); n < 3 {
		t.Fatalf("the engine was asked for its info %d times; the stall is at the third, so the case was not reached", n)
	}
	t.Logf("Connect: %v", err)
}
