package subjects

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// curatorSources are the Java workers, compiled together: CuratorBase
// (what they share), CuratorWorker (lock; its main picks the workload and,
// for the election, the recipe), CuratorCandidate (the election protocol)
// with CuratorElection (LeaderLatch) and CuratorSelector (LeaderSelector).
//
//go:embed curator/*.java
var curatorSources embed.FS

// JavaLibEnv overrides where the Curator, ZooKeeper, Guava and SLF4J jars
// are found (default /usr/share/java, Debian's layout).
const JavaLibEnv = "ZKCHAOS_JAVA_LIB"

// curatorJars are the jars the worker needs, by Debian's unversioned names:
// Curator 5.4 (libcurator-*-java), its ZooKeeper client, Guava, and SLF4J
// with the simple binding so Curator's log lands on the worker's stderr.
var curatorJars = []string{"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
	"zookeeper.jar", "zookeeper-jute.jar", "guava.jar", "slf4j-api.jar", "slf4j-simple.jar"}

var curatorMemo memo

// curatorCommand compiles the Java worker once per source and classpath
// (cached under the user's cache directory, keyed by their hash) and
// returns java with the arguments that run it.
func curatorCommand() (string, []string, error) { return curatorMemo.get(findCurator) }

func findCurator() (string, []string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return "", nil, fmt.Errorf("no java on PATH (scripts/install-deps.sh installs it): %w", err)
	}
	lib := os.Getenv(JavaLibEnv)
	if lib == "" {
		lib = "/usr/share/java"
	}
	var cp []string
	for _, j := range curatorJars {
		p := filepath.Join(lib, j)
		if _, err := os.Stat(p); err != nil {
			return "", nil, fmt.Errorf("missing %s (install libcurator-recipes-java, or run scripts/install-deps.sh): %w", p, err)
		}
		cp = append(cp, p)
	}
	classpath := strings.Join(cp, ":")
	dir, err := compileCurator(classpath)
	if err != nil {
		return "", nil, err
	}
	// A small heap and serial GC: six of these share two cores with the
	// ensemble, and a worker holds a handful of objects.
	// No SASL: the ZooKeeper client would otherwise look up the server's
	// host name before it even opens a socket, and a worker's namespace
	// has no DNS, so every connect would hang in that lookup.
	return java, []string{"-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.sasl.client=false", "-Dzookeeper.sasl.client.canonicalize.hostname=false",
		"-Dorg.slf4j.simpleLogger.logFile=System.err", "-cp", dir + ":" + classpath, "CuratorWorker"}, nil
}

// cacheRoot is $XDG_CACHE_HOME/zkchaos or ~/.cache/zkchaos.
func cacheRoot() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "zkchaos"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: %w", err)
	}
	return filepath.Join(home, ".cache", "zkchaos"), nil
}

// compileCurator returns a directory holding the compiled worker, building
// it if the cache has none for this source and classpath. The build goes
// to a temporary directory renamed into place, so concurrent runs never
// see half a build.
func compileCurator(classpath string) (string, error) {
	srcs, err := fs.Glob(curatorSources, "curator/*.java")
	if err != nil {
		return "", fmt.Errorf("embedded Java sources: %w", err)
	}
	h := sha256.New()
	for _, name := range srcs {
		b, err := curatorSources.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("embedded Java source: %w", err)
		}
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(b)
		h.Write([]byte{0})
	}
	h.Write([]byte(classpath))
	key := hex.EncodeToString(h.Sum(nil))[:16]
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "curator-"+key)
	if _, err := os.Stat(filepath.Join(dir, "CuratorWorker.class")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return "", fmt.Errorf("no javac on PATH to compile the Curator worker (install a JDK, e.g. Debian's openjdk-17-jdk-headless, or run scripts/install-deps.sh): %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".build-")
	if err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	var files []string
	for _, name := range srcs {
		b, err := curatorSources.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("embedded Java source: %w", err)
		}
		dst := filepath.Join(tmp, path.Base(name))
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return "", fmt.Errorf("write Java source: %w", err)
		}
		files = append(files, dst)
	}
	classes := filepath.Join(tmp, "classes")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, javac, append([]string{"-nowarn", "-cp", classpath, "-d", classes}, files...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("javac %s: %w\n%s", strings.Join(srcs, " "), err, out.String())
	}
	if err := os.Rename(classes, dir); err != nil {
		// Another run may have finished the same build first.
		if _, serr := os.Stat(filepath.Join(dir, "CuratorWorker.class")); serr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("install compiled worker: %w", err)
	}
	return dir, nil
}
