package core

import (
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// TestLoopbackRunCatchesDoubleWrite runs without namespaces, as a user
// without root does: everything on 127.0.0.1, pauses still work, and the
// unfenced run is still caught.
func TestLoopbackRunCatchesDoubleWrite(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	r := chaostest.Run(t, results, append([]string{"--net", "loopback", "--fencing", "off", "--time-limit", "20s",
		"--nemesis-interval", "2s", "--seed", "5", "--name", "loopback"}, chaostest.UntilViolation()...)...)
	if r.Code != 1 {
		t.Fatalf("loopback unfenced run exited %d, want 1\nstdout: %s\nstderr tail: %s", r.Code, r.Stdout, chaostest.Tail(r.Stderr, 3000))
	}
	tj := chaostest.ReadTest(t, r.Dir)
	if tj.NetMode != "loopback" {
		t.Errorf("net_mode %q, want loopback", tj.NetMode)
	}
	if !strings.Contains(r.Stdout, "double writes:") {
		t.Errorf("no double writes printed: %s", r.Stdout)
	}
	chaostest.AssertNothingLeft(t, r.Dir)
}
