package local

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster/zkjvm"
)

// writeJar writes a jar (a zip) at path holding the named classes, and a
// manifest naming classPath when it is not "".
func writeJar(t *testing.T, path, classPath string, classes ...string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for _, c := range classes {
		if _, err := z.Create(strings.ReplaceAll(c, ".", "/") + ".class"); err != nil {
			t.Fatal(err)
		}
	}
	if classPath != "" {
		w, err := z.Create("META-INF/MANIFEST.MF")
		if err != nil {
			t.Fatal(err)
		}
		// Folded as jar tools fold it: 72 bytes, then a line that starts
		// with a space.
		line := "Class-Path: " + classPath
		for len(line) > 72 {
			_, _ = w.Write([]byte(line[:72] + "\r\n"))
			line = " " + line[72:]
		}
		_, _ = w.Write([]byte(line + "\r\nCreated-By: test\r\n"))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestZooKeeperHomeNeedsTheServer: a $ZOOKEEPER_HOME whose lib lacks a
// class the server cannot start without (the server, its records, its
// logging API) is refused by the class path, so at a run's validation,
// before anything is made, naming what is missing; a server jar whose
// manifest names the others (in a folder of their own) is taken.
func TestZooKeeperHomeNeedsTheServer(t *testing.T) {
	home := t.TempDir()
	lib, deps := filepath.Join(home, "lib"), filepath.Join(home, "deps-with-a-long-folder-name-that-folds")
	for _, d := range []string{lib, deps} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(lib, "broken.jar"), []byte("not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeJar(t, filepath.Join(deps, "slf4j-api.jar"), "", "org.slf4j.LoggerFactory")
	t.Setenv("ZOOKEEPER_HOME", home)
	for _, c := range []struct {
		name, classPath string
		missing         []string
	}{
		{"no server", "", []string{zkjvm.MainClass, "org.apache.jute.Record", "org.slf4j.LoggerFactory"}},
		{"server without its records", "../" + filepath.Base(deps) + "/slf4j-api.jar", []string{"org.apache.jute.Record"}},
	} {
		classes := []string{"org.apache.zookeeper.ZooKeeper"}
		if c.name != "no server" {
			classes = append(classes, zkjvm.MainClass)
		}
		writeJar(t, filepath.Join(lib, "zookeeper.jar"), c.classPath, classes...)
		_, err := DefaultClassPath()
		for _, m := range c.missing {
			if err == nil || !strings.Contains(err.Error(), m) {
				t.Errorf("%s: %v, want an error naming %s", c.name, err, m)
			}
		}
	}
	writeJar(t, filepath.Join(deps, "zookeeper-jute.jar"), "", "org.apache.jute.Record")
	writeJar(t, filepath.Join(lib, "zookeeper.jar"), "../"+filepath.Base(deps)+"/zookeeper-jute.jar "+deps+"/slf4j-api.jar", zkjvm.MainClass)
	cp, err := DefaultClassPath()
	if err != nil || !strings.Contains(cp, "zookeeper.jar") || !strings.HasSuffix(cp, ":"+filepath.Join(home, "conf")) {
		t.Errorf("a lib with the server and its manifest's jars: %q, %v", cp, err)
	}
}

// TestDebianClassPathComplete: where Debian's jars are installed, the
// default class path has every class the server needs, found in well
// under a run's notice.
func TestDebianClassPathComplete(t *testing.T) {
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		t.Skip("no Debian ZooKeeper jars")
	}
	t.Setenv("ZOOKEEPER_HOME", "")
	start := time.Now()
	if _, err := DefaultClassPath(); err != nil {
		t.Fatal(err)
	}
	t.Logf("class path checked in %s", time.Since(start).Round(time.Millisecond))
}
