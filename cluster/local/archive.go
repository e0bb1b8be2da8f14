package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster/zkjvm"
	"github.com/zkchaos/zkchaos/host/proc"
)

// A ZooKeeper JVM spends most of its start loading classes; on a small
// machine three of them at once take about 2 s before serving. A dynamic
// class-data-sharing archive (JDK 13 and later) holds those classes
// already parsed and verified, and cuts that start by a quarter. One is
// made per machine and kept in the user's cache folder, named by a key of
// the java binary and the class path, so any change of either makes a new
// one. Deleting the folder is always safe: the next ensemble makes a new
// archive.
//
// A JVM does not check an archive's length: a truncated one crashes it at
// start (SIGBUS, seen with OpenJDK 17). So an archive is used only when its
// SHA-256 matches the sum written beside it when it was kept.

// termExit is a JVM's exit status after SIGTERM (128+15): it ran its
// shutdown, the archive dump among it, to the end.
const termExit = 143

// classArchive is what one cluster does with the archive: use it, or have
// node 1 dump one at exit into tmp. A nil *classArchive does neither.
type classArchive struct {
	path string
	use  bool
	tmp  string
}

// flags are the JVM options of node id for the archive.
func (a *classArchive) flags(id int) []string {
	switch {
	case a == nil:
		return nil
	case a.use:
		return []string{"-XX:SharedArchiveFile=" + a.path}
	case a.tmp != "" && id == 1:
		return []string{"-XX:ArchiveClassesAtExit=" + a.tmp}
	}
	return nil
}

// dumps says node id writes the archive as it exits.
func (a *classArchive) dumps(id int) bool {
	return a != nil && !a.use && a.tmp != "" && id == 1
}

// dumpGrace is how long a node that writes the archive at exit gets to
// exit after SIGTERM: writing it is seconds of CPU, and beside a loaded
// suite (load 10 on 2 cores) a JVM once was still writing after the 10 s
// every other node gets, so it was killed and no archive was made. It
// is paid once per machine, by the run that makes the archive.
const dumpGrace = time.Minute

// archiveDir is the folder of the archives, created if need be.
func archiveDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "zkchaos")
	return dir, os.MkdirAll(dir, 0o755)
}

// archiveKey names the archive of a java binary and class path: it
// changes when the binary (its resolved path, size or time) or any entry
// of the class path (size or time) changes, and with the JVM flags, which
// an archive must be used with.
func archiveKey(java, classPath string) (string, error) {
	exe, err := exec.LookPath(java)
	if err != nil {
		return "", err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return "", err
	}
	h := sha256.New()
	for _, p := range append([]string{exe}, filepath.SplitList(classPath)...) {
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", p, st.Size(), st.ModTime().UnixNano())
		} else {
			fmt.Fprintf(h, "%s missing\n", p)
		}
	}
	fmt.Fprintf(h, "%s\n", strings.Join(zkjvm.Flags(), " "))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// prepareArchive decides what the cluster does with the archive. It never
// fails a run: without a cache folder or a JVM that can dump, the servers
// start as they always did.
func prepareArchive(ctx context.Context, cfg *Config) *classArchive {
	log := cfg.Logger
	dir, err := archiveDir()
	if err != nil {
		log.Debug("no class archive: no cache folder", "err", err)
		return nil
	}
	key, err := archiveKey(cfg.Java, cfg.ClassPath)
	if err != nil {
		log.Debug("no class archive: java not found", "err", err)
		return nil
	}
	removeStaleTmp(dir, log)
	base := filepath.Join(dir, "zk-"+key)
	a := &classArchive{path: base + ".jsa"}
	if a.use = intactArchive(a.path, log); a.use {
		log.Info("ZooKeeper JVMs start from class archive", "path", a.path)
		return a
	}
	if !dumpSupported(ctx, cfg.Java, dir, base, log) {
		return nil
	}
	if a.tmp, err = newTmp(dir, "zk-"+key); err != nil {
		log.Debug("no class archive", "err", err)
		return nil
	}
	log.Info("zk node 1 makes a class archive at exit", "path", a.path)
	return a
}

// intactArchive reports whether the archive exists and matches its sum;
// a damaged one (or one without a sum) is removed, to be made again.
func intactArchive(path string, log *slog.Logger) bool {
	if _, err := os.Stat(path); err != nil {
		return false
	}
	want, err := os.ReadFile(path + ".sha256")
	got, serr := fileSum(path)
	if err == nil && serr == nil {
		if got == strings.TrimSpace(string(want)) {
			return true
		}
		err = errors.New("its SHA-256 does not match its sum")
	}
	log.Warn("class archive damaged, removed; it is made again", "path", path, "err", errors.Join(err, serr))
	os.Remove(path)
	os.Remove(path + ".sha256")
	return false
}

// dumpSupported reports whether java can dump an archive, asking it once:
// a JVM that cannot (JDK 11 does not know the flag and would not start)
// is recorded by a marker file, so later runs do not ask again.
func dumpSupported(ctx context.Context, java, dir, base string, log *slog.Logger) bool {
	marker := base + ".unsupported"
	if _, err := os.Stat(marker); err == nil {
		log.Debug("no class archive: this java cannot make one", "marker", marker)
		return false
	}
	tmp, err := newTmp(dir, filepath.Base(base))
	if err != nil {
		log.Debug("no class archive", "err", err)
		return false
	}
	defer os.Remove(tmp)
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(pctx, java, "-XX:ArchiveClassesAtExit="+tmp, "-version").CombinedOutput()
	if pctx.Err() != nil {
		log.Debug("no class archive: probe of java did not finish", "err", pctx.Err())
		return false
	}
	if st, serr := os.Stat(tmp); err == nil && serr == nil && st.Size() > 0 {
		return true
	}
	log.Info("no class archive: this java cannot make one", "err", err, "java", strings.SplitN(string(bytes.TrimSpace(out)), "\n", 2)[0])
	if werr := os.WriteFile(marker, out, 0o644); werr != nil {
		log.Debug("class archive marker not written", "err", werr)
	}
	return false
}

// newTmp is an empty file of a unique name whose pid field lets
// removeStaleTmp tell when its writer has gone.
func newTmp(dir, prefix string) (string, error) {
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s.%d.*.tmp", prefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("class archive: %w", err)
	}
	f.Close()
	return f.Name(), nil
}

// removeStaleTmp removes the temporary files of controllers that died
// before they could remove them.
func removeStaleTmp(dir string, log *slog.Logger) {
	tmps, _ := filepath.Glob(filepath.Join(dir, "zk-*.tmp"))
	for _, t := range tmps {
		parts := strings.Split(filepath.Base(t), ".")
		if len(parts) < 4 {
			continue
		}
		pid, err := strconv.Atoi(parts[len(parts)-3])
		if err == nil && pid != os.Getpid() && !proc.Alive(pid) {
			log.Debug("removed stale class archive file", "path", t)
			os.Remove(t)
		}
	}
}

// finish keeps the dump of node 1 as the archive when the JVM ended by
// itself after SIGTERM, so that the dump is whole; a SIGKILLed JVM may
// have written part of it. Otherwise, and always in the end, the temporary
// file goes. Concurrent clusters each rename their own file: the last one
// wins, whole.
func (a *classArchive) finish(n *Node, log *slog.Logger) {
	if a == nil || a.tmp == "" {
		return
	}
	defer os.Remove(a.tmp)
	exited, err := n.Exited()
	var ee *exec.ExitError
	if !exited || !errors.As(err, &ee) || ee.ExitCode() != termExit {
		log.Debug("class archive not kept: zk node 1 did not end on SIGTERM", "exit", err)
		return
	}
	if err := keepArchive(a.tmp, a.path); err != nil {
		log.Warn("class archive not kept", "err", err)
		return
	}
	log.Info("class archive made", "path", a.path)
}

// keepArchive writes tmp's sum beside path, then renames tmp onto path.
func keepArchive(tmp, path string) error {
	sum, err := fileSum(tmp)
	if err != nil {
		return err
	}
	stmp, err := newTmp(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(stmp)
	if err := os.WriteFile(stmp, []byte(sum+"\n"), 0o644); err != nil {
		return fmt.Errorf("class archive sum: %w", err)
	}
	if err := os.Rename(stmp, path+".sha256"); err != nil {
		return fmt.Errorf("class archive sum: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("class archive: %w", err)
	}
	return nil
}

// fileSum is the SHA-256 of a non-empty file.
func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if size == 0 {
		return "", fmt.Errorf("%s is empty", path)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
