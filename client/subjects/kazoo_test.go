package subjects

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKazooWorkloads: kazoo serves the lock workload only, by name, and
// is listed among the subjects.
func TestKazooWorkloads(t *testing.T) {
	for _, w := range []string{"", "lock"} {
		if err := ValidateFor(w, Kazoo); err != nil {
			t.Errorf("ValidateFor(%q, kazoo) = %v", w, err)
		}
	}
	for _, w := range []string{"config", "election"} {
		err := ValidateFor(w, Kazoo)
		if err == nil || !strings.Contains(err.Error(), "serves only the lock workload") {
			t.Errorf("ValidateFor(%q, kazoo) = %v, want it refused as lock-only", w, err)
		}
	}
	if !slices.Contains(Names(), Kazoo) {
		t.Errorf("Names() %v lacks %s", Names(), Kazoo)
	}
}

// TestKazooCommand: with python3-kazoo installed, the command is the
// interpreter itself (no shell: the PID the nemesis stops is the client)
// running the cached worker, which is byte for byte the embedded one, with
// the protocol flags last and no --recipe.
func TestKazooCommand(t *testing.T) {
	if err := exec.Command(DefaultPython, "-c", "import kazoo").Run(); err != nil {
		t.Skipf("%s cannot import kazoo (python3-kazoo): %v", DefaultPython, err)
	}
	freshKazoo(t, "")
	prog, args, err := Command("/bin/chaos", Kazoo, flags)
	if err != nil {
		t.Fatal(err)
	}
	if prog != DefaultPython || len(args) < 3 || args[len(args)-2] != "--root" || slices.Contains(args, "--recipe") {
		t.Fatalf("got %s %q", prog, args)
	}
	script := args[slices.Index(args, "--zk")-1]
	b, err := os.ReadFile(script)
	if err != nil || string(b) != string(kazooSource) {
		t.Fatalf("cached worker %s: %v (same as embedded: %v)", script, err, string(b) == string(kazooSource))
	}
	// The worker refuses another workload before its hello, exit 2.
	out, err := exec.Command(prog, script, "--workload", "config").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "lock workload only") {
		t.Errorf("worker with --workload config: %v, %q; want exit 2 saying lock only", err, out)
	}
}

// TestKazooMissing: an interpreter that cannot import kazoo (a venv
// without the system's packages: python3 present, python3-kazoo not) is
// refused naming the package; so are a missing and a relative one.
func TestKazooMissing(t *testing.T) {
	if _, err := os.Stat(DefaultPython); err != nil {
		t.Skipf("no %s", DefaultPython)
	}
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(DefaultPython, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("cannot make a venv: %v: %s", err, out)
	}
	for py, want := range map[string]string{
		filepath.Join(venv, "bin", "python3"): "python3-kazoo missing",
		"/no/such/python3":                    "no Python interpreter at /no/such/python3",
		"python3":                             "absolute path",
	} {
		freshKazoo(t, py)
		_, _, err := Command("/bin/chaos", Kazoo, flags)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: %v, want an error with %q", PythonEnv, py, err, want)
		}
	}
}

// freshKazoo forgets an earlier test's command and sets the interpreter
// ("" the default) and a cache of the test's own.
func freshKazoo(t *testing.T, python string) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv(PythonEnv, python)
	kazooMemo.forget()
}
