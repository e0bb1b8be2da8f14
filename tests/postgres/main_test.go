// Package postgres holds the integration tests of --resource postgres
// against the real binary, a real ensemble and a real
// PostgreSQL 15 started by the run: fenced valid and unfenced caught from
// the audit table (side by side), the exported apply log replaying and
// checked again by chaos check, a server that fails to start, missing
// binaries and other bad input, a controller SIGKILLed with the server
// running (its results folder one the postgres user cannot reach). Each
// run is at most 15 s of workload.
package postgres

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/resource/pgfence"
)

func TestMain(m *testing.M) { chaostest.Main(m) }

// needPostgres skips where a postgres run would be refused.
func needPostgres(t *testing.T) {
	t.Helper()
	chaostest.NeedNetns(t)
	if err := pgfence.Preflight(); err != nil {
		t.Skip(err)
	}
}

// results is a results folder the postgres user can reach, so that the
// data directory is in the run folder (under t.TempDir, whose parent is
// private, mode 0700, it goes outside: TestControllerKilled).
func results(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "zkchaos-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run is chaostest.Run with extra environment.
func run(t *testing.T, env []string, res string, args ...string) chaostest.RunResult {
	t.Helper()
	cmd := exec.Command(chaostest.Binary(t), append([]string{"run", "--results", res, "--progress", "off"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("chaos run: %v", err)
	}
	return chaostest.RunResult{Code: chaostest.ExitOf(err), Stdout: so.String(), Stderr: se.String(), Dir: chaostest.LatestRun(res)}
}
