package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCreateLinksLatest(t *testing.T) {
	base := t.TempDir()
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	a, err := Create(base, "lock", t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Create(base, "lock", t0.Add(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{filepath.Join(base, "latest"), filepath.Join(base, "lock", "latest")} {
		got, err := filepath.EvalSymlinks(link)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := filepath.EvalSymlinks(b.Dir)
		if got != want {
			t.Errorf("%s -> %s, want %s", link, got, want)
		}
	}
	if a.Dir == b.Dir {
		t.Fatal("two runs share a folder")
	}
	for _, sub := range []string{ZKDir, WorkersDir} {
		if st, err := os.Stat(b.Path(sub)); err != nil || !st.IsDir() {
			t.Errorf("run folder lacks %s", sub)
		}
	}
	// Same millisecond: a folder of its own, sorting after the first run
	// and before the next millisecond's.
	c, err := Create(base, "lock", t0)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(c.Dir) != filepath.Base(a.Dir)+"-001" {
		t.Errorf("second run in the same millisecond: %s, want %s-001", c.Dir, a.Dir)
	}
	if !(filepath.Base(a.Dir) < filepath.Base(c.Dir) && filepath.Base(c.Dir) < filepath.Base(b.Dir)) {
		t.Errorf("folders do not sort by start: %s, %s, %s", a.Dir, c.Dir, b.Dir)
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"lock", "seed-fenced_1.2", "A"} {
		if err := ValidName(n); err != nil {
			t.Errorf("ValidName(%q): %v", n, err)
		}
	}
	for _, n := range []string{"", "../x", "a/b", ".hidden", "-x", strings.Repeat("a", 101)} {
		if err := ValidName(n); err == nil {
			t.Errorf("ValidName(%q) accepted", n)
		}
	}
}

func TestOpenNeedsHistory(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), HistoryFile) {
		t.Fatalf("Open of an empty folder: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, HistoryFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
}

func TestCheckBase(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{dir, filepath.Join(dir, "new", "deeper")} {
		if err := CheckBase(ok); err != nil {
			t.Errorf("CheckBase(%s): %v", ok, err)
		}
	}
	for _, bad := range []string{file, filepath.Join(file, "below"), "/proc/forbidden"} {
		if err := CheckBase(bad); err == nil {
			t.Errorf("CheckBase(%s) accepted", bad)
		}
	}
	// Nothing is left behind: no probe, no created folder.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("CheckBase left %d entries in %s, want only the file", len(entries), dir)
	}
}

func TestStoppedAtFirst(t *testing.T) {
	got, ok := StoppedAtFirst(Status{StoppedBecause: StoppedAtFirstBecause("double-writer")})
	if !ok || got != "double-writer" {
		t.Errorf("StoppedAtFirst = %q %v, want double-writer true", got, ok)
	}
	for _, why := range []string{StopTimeLimit, StopInterrupted + " (signal interrupt)", "", "harness failure: disk full"} {
		if _, ok := StoppedAtFirst(Status{StoppedBecause: why}); ok {
			t.Errorf("StoppedAtFirst(%q) = true", why)
		}
	}
}

// A file written atomically is readable by others, like every other file
// of a run folder, whatever CreateTemp's own mode.
func TestWriteFileAtomicMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	if err := WriteFileAtomic(path, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o644 {
		t.Errorf("mode %v, want -rw-r--r--", m)
	}
}
