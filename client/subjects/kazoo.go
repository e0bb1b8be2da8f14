package subjects

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Kazoo is the name of the Python subject: kazoo's Lock recipe
// (subjects/kazoo/kazoo_worker.py), lock workload only.
const Kazoo = "kazoo"

// kazooSource is the Python worker, written to the cache on first use and
// run by the interpreter directly (one process: the PID the nemesis stops
// is the client's).
//
//go:embed kazoo/kazoo_worker.py
var kazooSource []byte

// PythonEnv overrides the interpreter the kazoo subject runs with
// (default /usr/bin/python3, Debian's, where python3-kazoo installs; not
// whatever python3 is first on PATH).
const PythonEnv = "ZKCHAOS_PYTHON"

// DefaultPython is the interpreter of the kazoo subject without PythonEnv.
const DefaultPython = "/usr/bin/python3"

var kazooMemo memo

// kazooCommand checks once per process that the interpreter imports
// kazoo's client and Lock recipe, writes the worker to the cache (keyed
// by its hash) and returns the interpreter with the arguments that run it.
// A missing python3-kazoo is an error naming the package, before anything
// of a run is made.
func kazooCommand() (string, []string, error) { return kazooMemo.get(findKazoo) }

func findKazoo() (string, []string, error) {
	py := os.Getenv(PythonEnv)
	if py == "" {
		py = DefaultPython
	}
	if !filepath.IsAbs(py) {
		return "", nil, fmt.Errorf("%s=%q: give the interpreter's absolute path", PythonEnv, py)
	}
	if err := checkKazoo(py); err != nil {
		return "", nil, err
	}
	script, err := cacheKazooWorker()
	if err != nil {
		return "", nil, err
	}
	// -u: unbuffered (the worker flushes every line anyway); -B: no
	// bytecode files next to the cached script.
	return py, []string{"-u", "-B", script}, nil
}

// checkKazoo runs the interpreter once to import what the worker uses.
func checkKazoo(py string) error {
	if _, err := os.Stat(py); err != nil {
		return fmt.Errorf("no Python interpreter at %s (install python3-kazoo, or run scripts/install-deps.sh): %w", py, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, py, "-c", "import kazoo.client, kazoo.recipe.lock")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		last := strings.TrimSpace(out.String())
		if i := strings.LastIndexByte(last, '\n'); i >= 0 {
			last = last[i+1:] // the exception, not the traceback
		}
		return fmt.Errorf("python3-kazoo missing: %s cannot import kazoo (apt-get install -y python3-kazoo, or run scripts/install-deps.sh): %w: %s",
			py, err, last)
	}
	return nil
}

// cacheKazooWorker writes the embedded worker under the cache directory,
// named by its hash, through a temporary file renamed into place so that
// concurrent runs never read half a file.
func cacheKazooWorker() (string, error) {
	sum := sha256.Sum256(kazooSource)
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "kazoo-"+hex.EncodeToString(sum[:])[:16])
	script := filepath.Join(dir, "kazoo_worker.py")
	if b, err := os.ReadFile(script); err == nil && bytes.Equal(b, kazooSource) {
		return script, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".kazoo_worker-*.py")
	if err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	_, werr := tmp.Write(kazooSource)
	if err := errors.Join(werr, tmp.Chmod(0o644), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write the kazoo worker: %w", err)
	}
	if err := os.Rename(tmp.Name(), script); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("install the kazoo worker: %w", err)
	}
	return script, nil
}
