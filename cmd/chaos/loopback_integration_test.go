package main

import (
	"strings"
	"testing"
)

// TestLoopbackRunCatchesDoubleWrite runs without namespaces, as a user
// without root does: everything on 127.0.0.1, pauses still work, and the
// unfenced run is still caught.
func TestLoopbackRunCatchesDoubleWrite(t *testing.T) {
	needEnsemble(t)
	results := t.TempDir()
	r := chaosRun(t, results, "--net", "loopback", "--fencing", "off", "--time-limit", "20s",
		"--nemesis-interval", "2s", "--seed", "5", "--name", "loopback")
	if r.code != 1 {
		t.Fatalf("loopback unfenced run exited %d, want 1\nstdout: %s\nstderr tail: %s", r.code, r.stdout, tail(r.stderr, 3000))
	}
	tj := readTest(t, r.dir)
	if tj.NetMode != "loopback" {
		t.Errorf("net_mode %q, want loopback", tj.NetMode)
	}
	if !strings.Contains(r.stdout, "double writes:") {
		t.Errorf("no double writes printed: %s", r.stdout)
	}
	assertNothingLeft(t, tj.RunID)
}
