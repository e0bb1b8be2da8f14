package pgfence

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// postgresUser is the uid and gid of SystemUser; the test skips where
// there is none or it cannot act as it (not root).
func postgresUser(t *testing.T) (uid, gid int) {
	t.Helper()
	u, err := user.Lookup(SystemUser)
	if err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and the %s user (%v)", SystemUser, err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// TestDataDirOutsideAPrivateFolder: under a run folder the postgres user
// cannot reach (t.TempDir's parent is 0700), the data directory is the
// postgres user's, in a folder of its own it can reach, and the run
// folder links to it; under a folder it can reach, the data directory is
// in the run folder. Removing the data removes the link, the data and
// the folder made for it.
func TestDataDirOutsideAPrivateFolder(t *testing.T) {
	uid, gid := postgresUser(t)
	open, err := os.MkdirTemp("", "pgfence-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(open) })
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		dir     string
		outside bool
	}{
		{"private", filepath.Join(t.TempDir(), "postgres"), true},
		{"reachable", filepath.Join(open, "postgres"), false},
	} {
		cfg := ServerConfig{Dir: c.dir}
		data, err := prepareDir(cfg, uid, gid)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		cfg.data = data
		if got := data != cfg.DataDir(); got != c.outside {
			t.Errorf("%s: data directory %s outside the run folder: %v, want %v", c.name, data, got, c.outside)
		}
		if link, err := filepath.EvalSymlinks(cfg.DataDir()); err != nil || link != data {
			t.Errorf("%s: %s leads to %q (%v), want %s", c.name, cfg.DataDir(), link, err, data)
		}
		st, err := os.Stat(data)
		if err != nil || st.Mode().Perm() != 0o700 || int(st.Sys().(*syscall.Stat_t).Uid) != uid {
			t.Errorf("%s: data directory %v (%v), want mode 0700 of uid %d", c.name, st, err, uid)
		}
		if err := reachable(data, uid, gid); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if err := removeData(cfg); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, p := range []string{cfg.DataDir(), data, filepath.Dir(data)} {
			if _, err := os.Lstat(p); err == nil && p != c.dir {
				t.Errorf("%s: %s left after removeData", c.name, p)
			}
		}
	}
}

// TestPreflightRefusesAnUnreachableBinDir: server binaries the postgres
// user cannot reach (an override under a private folder) are refused
// before a run makes anything, not when initdb fails after its network
// exists.
func TestPreflightRefusesAnUnreachableBinDir(t *testing.T) {
	postgresUser(t)
	if err := Preflight(); err != nil {
		t.Skip(err)
	}
	private := t.TempDir() // its parent is 0700
	for _, b := range []string{"initdb", "postgres"} {
		if err := os.Symlink(filepath.Join(DefaultBinDir, b), filepath.Join(private, b)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(BinDirEnv, private)
	if err := Preflight(); err == nil || !strings.Contains(err.Error(), "cannot reach "+private) {
		t.Errorf("Preflight with %s=%s: %v, want it refused", BinDirEnv, private, err)
	}
}
