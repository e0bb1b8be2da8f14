package chaostest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// inUse is this process's shared flock on the build folder it runs from
// (useLock), held until the process exits.
var inUse *os.File

// useLock is the file in a build folder that each test process running
// from it holds a shared flock on.
const useLock = "in-use.lock"

// sharedBuild builds the binaries into the checkout's bin/ folder, in a
// folder named by a hash of the sources they are built from, unless a test
// process of the same sources already has: test packages run as separate
// processes, often two at once, and each used to link its own copy. A
// flock on bin/test.lock makes the others wait for the first build rather
// than build again. Folders of other sources (an older state of the
// checkout) are removed once no test process runs from them: the sources
// can change while a suite runs (an edit, a log written into the
// checkout), and a folder removed under a running package made its next
// run fail to start. `make clean` removes bin/ as a whole.
func sharedBuild() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	key, newest, err := sourceKey(root)
	if err != nil {
		return "", fmt.Errorf("hash the sources: %w", err)
	}
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	lock, err := flockFile(filepath.Join(bin, "test.lock"), syscall.LOCK_EX)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	dir := filepath.Join(bin, "test-"+key)
	chaos := filepath.Join(dir, "chaos")
	// build renames a finished folder into place, so one binary there
	// means all are.
	if _, err := os.Stat(filepath.Join(dir, binaries[len(binaries)-1])); err != nil {
		if err := build(bin, dir, newest); err != nil {
			return "", err
		}
	}
	if inUse, err = flockFile(filepath.Join(dir, useLock), syscall.LOCK_SH); err != nil {
		return "", err
	}
	return chaos, nil
}

// Prebuilt is the variable by which make test names the folder it has
// just built its binaries into, from this checkout.
const Prebuilt = "ZKCHAOS_TEST_PREBUILT"

// build builds the binaries into dir, and removes the other build folders
// no test process runs from. The caller holds bin/test.lock. Binaries of
// Prebuilt that are newer than every source file (newest) are taken
// instead of building: the suite's first tests then start without
// linking the two largest binaries again, beside the links of every
// test binary.
func build(bin, dir string, newest time.Time) error {
	tmp, err := os.MkdirTemp(bin, "building-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if !takePrebuilt(tmp, newest) {
		if _, err := BuildInto(tmp); err != nil {
			return err
		}
	}
	old, _ := filepath.Glob(filepath.Join(bin, "test-*"))
	for _, o := range old {
		removeUnused(o)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("keep the build: %w", err)
	}
	return nil
}

// takePrebuilt copies the binaries of Prebuilt into dir when all are
// newer than newest; it says whether it did.
func takePrebuilt(dir string, newest time.Time) bool {
	from := os.Getenv(Prebuilt)
	if from == "" {
		return false
	}
	for _, name := range binaries {
		st, err := os.Stat(filepath.Join(from, name))
		if err != nil || !st.ModTime().After(newest) || copyFile(filepath.Join(from, name), filepath.Join(dir, name)) != nil {
			return false
		}
	}
	return true
}

// removeUnused removes build folder dir unless a test process holds its
// useLock; one in use stays for a later build to remove.
func removeUnused(dir string) {
	f, err := os.Open(filepath.Join(dir, useLock))
	if err == nil {
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			return
		}
	}
	os.RemoveAll(dir)
}

// ownNames gives this test process names of its own for the shared
// binaries: hard links (copies where a link fails) in a folder of its
// own beside them. A process's /proc/<pid>/exe is the name it was started
// by, so AssertNothingStarted can tell this process's runs from those of
// test packages running beside it, which share the build.
func ownNames(shared string) (string, error) {
	dir, err := os.MkdirTemp(filepath.Dir(shared), "proc-")
	if err != nil {
		return "", err
	}
	for _, name := range binaries {
		src, dst := filepath.Join(filepath.Dir(shared), name), filepath.Join(dir, name)
		if os.Link(src, dst) == nil {
			continue
		}
		if err := copyFile(src, dst); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("name the shared build: %w", err)
		}
	}
	return filepath.Join(dir, "chaos"), nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ModuleRoot is the folder of the module's go.mod, found upwards from the
// working folder (a test's is its package's folder).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("find the repository: no go.mod above the working folder")
		}
		dir = up
	}
}

// sourceKey hashes what the binaries can be built from: every file of
// the module outside bin/, results/, docs/, tests/ and dot folders, test
// files and the root's files but go.mod and go.sum left out, with its
// path, and the Go version. Embedded files
// (templates, the Curator and kazoo workers) count like Go files. It also
// returns the newest of those files' modification times.
func sourceKey(root string) (string, time.Time, error) {
	var newest time.Time
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	skip := map[string]bool{"bin": true, "results": true, "docs": true, "tests": true, "man": true}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (skip[rel] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		// The module's root holds no package: of its files only go.mod
		// and go.sum are built from (a log written there is not).
		atRoot := filepath.Dir(rel) == "."
		if !d.Type().IsRegular() || strings.HasSuffix(path, "_test.go") || atRoot && rel != "go.mod" && rel != "go.sum" {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.ModTime().After(newest) {
			newest = st.ModTime()
		}
		fmt.Fprintf(h, "%s\x00", rel)
		_, err = io.Copy(h, f)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))[:16], newest, err
}
