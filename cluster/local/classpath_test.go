package local

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/cluster/zkjvm"
)

// writeJar writes a jar (a zip) at path holding the named entries.
func writeJar(t *testing.T, path string, entries ...string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for _, e := range entries {
		if _, err := z.Create(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestZooKeeperHomeNeedsTheServer: a $ZOOKEEPER_HOME whose lib lacks the
// server's main class is refused by the class path (so at a run's
// validation, before anything is made); one that holds it is taken, with
// its conf folder.
func TestZooKeeperHomeNeedsTheServer(t *testing.T) {
	home := t.TempDir()
	lib := filepath.Join(home, "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJar(t, filepath.Join(lib, "slf4j-api.jar"), "org/slf4j/Logger.class")
	if err := os.WriteFile(filepath.Join(lib, "broken.jar"), []byte("not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ZOOKEEPER_HOME", home)
	if _, err := DefaultClassPath(); err == nil || !strings.Contains(err.Error(), zkjvm.MainClass) {
		t.Errorf("a lib without the server: %v, want an error naming %s", err, zkjvm.MainClass)
	}
	main := strings.ReplaceAll(zkjvm.MainClass, ".", "/") + ".class"
	writeJar(t, filepath.Join(lib, "zookeeper-3.8.0.jar"), "org/apache/zookeeper/ZooKeeper.class", main)
	cp, err := DefaultClassPath()
	if err != nil || !strings.Contains(cp, "zookeeper-3.8.0.jar") || !strings.HasSuffix(cp, ":"+filepath.Join(home, "conf")) {
		t.Errorf("a lib with the server: %q, %v", cp, err)
	}
}
