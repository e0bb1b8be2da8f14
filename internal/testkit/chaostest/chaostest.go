// Package chaostest is what the integration tests of zkchaos share: the
// real chaos binary and its built-in worker built once per source tree,
// the skips of tests that need an ensemble, root or the machine alone,
// running `chaos run` and `chaos check`, reading a run folder, and the
// check that a run left nothing behind.
//
// The integration tests live in packages under tests/, one job each, so
// that `go test ./...` runs two of them at once (-p is GOMAXPROCS) and no
// single package's timeout binds. They all use this package, so each
// helper has one owner. It is not a _test package because a _test package
// cannot be imported. Because packages run in parallel, every helper that
// judges the machine judges only the test's own run: another package's run
// may be starting, failing or being swept at the same moment.
package chaostest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	chaosBin  string
	buildErr  error
)

// Main runs the tests of a package and then removes this process's names
// for the binaries (ownNames). A test package's TestMain calls it: func
// TestMain(m *testing.M) { chaostest.Main(m) }.
func Main(m *testing.M) {
	waitAtTokens()
	code := m.Run()
	if chaosBin != "" {
		os.RemoveAll(filepath.Dir(chaosBin))
	}
	if inUse != nil {
		inUse.Close() // the build may go once every process is done with it
	}
	os.Exit(code)
}

// waitAtTokens lets every parallel test of the package start at once
// (-test.parallel 64 unless the command line sets it): the run tokens
// bound the real runs machine-wide, so a parallel test beyond
// GOMAXPROCS (the default) only waits for one, and it had better wait
// in the tokens' queue, where a long test (LongRun) goes first, than in
// the package's, behind tests that wait for a token themselves.
func waitAtTokens() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "64")
	}
}

// Binary returns the chaos command, with the built-in worker beside it,
// built from this checkout's sources. The tests run the real binaries, as
// a user does, rather than calling into cmd/chaos. Every test process of
// one `go test ./...` shares one build: linking the two binaries costs
// seconds, paid once rather than once per package (sharedBuild); each
// test process runs them under names of its own (ownNames).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		shared, err := sharedBuild()
		if err != nil {
			buildErr = err
			return
		}
		chaosBin, buildErr = ownNames(shared)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return chaosBin
}

// binaries are the programs make build puts into bin/, each built from
// the folder of its name under cmd/: the chaos command and the built-in
// worker's two binaries (subjects.WorkerBinary and
// subjects.ServicesWorkerBinary, which a test of this package keeps them
// equal to; a run finds its workers beside its own executable). Named
// here, not taken from client/subjects, which would link every subject's
// client into each test binary that uses this package.
var binaries = []string{"chaos", "chaos-worker", "chaos-worker-services"}

// BuildInto builds the binaries into dir, as `make build` puts them into
// bin/ (one go build, which links them at once), and returns the chaos
// binary's path. It builds by import path, so it works from any
// package's folder.
func BuildInto(dir string) (string, error) {
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, name := range binaries {
		args = append(args, "github.com/zkchaos/zkchaos/cmd/"+name)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", strings.Join(binaries, ", "), err, out)
	}
	return filepath.Join(dir, "chaos"), nil
}

// BinaryAlone is a copy of the chaos binary in a folder of its own,
// without the built-in worker beside it, for tests of what a run or a
// bench says when the worker is missing.
func BinaryAlone(t testing.TB) string {
	t.Helper()
	alone := filepath.Join(t.TempDir(), "chaos")
	b, err := os.ReadFile(Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return alone
}

// Worker is the built-in worker (cmd/chaos-worker) that Binary built
// beside chaos, for tests that start it as an exec: subject.
func Worker(t testing.TB) string {
	t.Helper()
	return filepath.Join(filepath.Dir(Binary(t)), binaries[1])
}

// ExitOf is the exit code of a finished command (0 for a nil error, -1
// when it did not exit by itself), so tests compare codes, not errors.
func ExitOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// exited reports whether err is what a command that ran and ended returns
// (nil, or an exit status), as opposed to one that could not run at all.
func exited(err error) bool {
	var ee *exec.ExitError
	return err == nil || errors.As(err, &ee)
}

// Tail is the last n bytes of s: a failure message quotes the end of a
// run's stderr, where the cause is, without pages of log before it.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
