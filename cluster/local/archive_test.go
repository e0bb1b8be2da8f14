package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/proc"
)

// fakeJava is an executable script standing in for java.
func fakeJava(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "java")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestArchiveKeyFollowsJars(t *testing.T) {
	java := fakeJava(t, "exit 0")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jar"), filepath.Join(dir, "b.jar")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("jar"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cp := a + ":" + b
	k1, err := archiveKey(java, cp)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := archiveKey(java, cp); k != k1 {
		t.Errorf("key changed with nothing changed: %s, %s", k1, k)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(b, later, later); err != nil {
		t.Fatal(err)
	}
	if k, _ := archiveKey(java, cp); k == k1 {
		t.Errorf("key %s unchanged after b.jar's mtime changed", k)
	}
	if k, _ := archiveKey(fakeJava(t, "exit 0\n# other"), cp); k == k1 {
		t.Errorf("key %s unchanged for another java binary", k)
	}
}

// A java that cannot dump an archive (as JDK 11, which does not know the
// flag) gets no archive flag, and a marker spares later runs the probe.
func TestArchiveUnsupportedJava(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	calls := filepath.Join(t.TempDir(), "calls")
	java := fakeJava(t, fmt.Sprintf("echo x >> %s; echo \"Unrecognized VM option '$1'\" >&2; exit 1", calls))
	cfg := &Config{Java: java, ClassPath: "/nonexistent.jar", Logger: testLogger(t)}
	for range 2 {
		if a := prepareArchive(context.Background(), cfg); a.flags(1) != nil {
			t.Errorf("flags %q for a java that cannot dump", a.flags(1))
		}
	}
	if b, _ := os.ReadFile(calls); strings.Count(string(b), "x") != 1 {
		t.Errorf("java probed %d times, want once", strings.Count(string(b), "x"))
	}
	assertArchiveFiles(t, filepath.Join(cache, "zkchaos"), "*.unsupported", 1)
	assertArchiveFiles(t, filepath.Join(cache, "zkchaos"), "*.tmp", 0)
}

// The first ensemble makes the archive, the second starts from it, and a
// truncated archive (which crashes a JVM that maps it) is not used.
func TestClassArchive(t *testing.T) {
	skipUnlessZK(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir := filepath.Join(cache, "zkchaos")
	archiveRun(t, "-XX:ArchiveClassesAtExit=", 1)
	assertArchiveFiles(t, dir, "*.jsa", 1)
	assertArchiveFiles(t, dir, "*.tmp", 0)
	if m, _ := filepath.Glob(filepath.Join(dir, "*.unsupported")); len(m) > 0 {
		t.Skipf("this java cannot make a class archive: %v", m)
	}
	archiveRun(t, "-XX:SharedArchiveFile=", 3)

	jsa, _ := filepath.Glob(filepath.Join(dir, "*.jsa"))
	b, err := os.ReadFile(jsa[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(jsa[0], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jsa[0], b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	archiveRun(t, "-XX:ArchiveClassesAtExit=", 1)
	assertArchiveFiles(t, dir, "*.jsa", 1)
	assertArchiveFiles(t, dir, "*.tmp", 0)
}

// archiveRun starts a 3-server ensemble, checks that it serves and that
// want nodes' command lines carry flag, and closes it.
func archiveRun(t *testing.T, flag string, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Launch(ctx, Config{Nodes: 3, Dir: t.TempDir(), Logger: testLogger(t),
		Env: proc.Env(fmt.Sprintf("test-%s-%d", t.Name(), os.Getpid()), proc.Self())})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	got := 0
	for _, n := range c.nodes {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", n.PID()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), flag) {
			got++
		}
	}
	if got != want {
		t.Errorf("%d servers run with %s, want %d", got, flag, want)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// assertArchiveFiles stops the test when dir does not hold want files of
// pattern: what follows reads them.
func assertArchiveFiles(t *testing.T, dir, pattern string, want int) {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != want {
		t.Fatalf("%s in %s: %v (%v), want %d", pattern, dir, m, err, want)
	}
}
