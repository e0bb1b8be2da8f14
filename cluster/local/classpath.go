package local

import (
	"archive/zip"
	"bufio"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zkchaos/zkchaos/cluster/zkjvm"
)

// serverClasses are classes a ZooKeeper server cannot start without, each
// in a jar of its own on Debian: the server, its wire records
// (zookeeper-jute) and its logging API (slf4j-api). A class path that
// lacks one only shows when every JVM exits at once, after the run's
// network is made.
var serverClasses = []string{zkjvm.MainClass, "org.apache.jute.Record", "org.slf4j.LoggerFactory"}

// missingClasses lists the serverClasses that no jar of jars holds,
// counting the jars their manifests' Class-Path names (Debian's
// zookeeper.jar names its dependencies so). A jar that does not open
// holds nothing.
func missingClasses(jars []string) []string {
	missing := slices.Clone(serverClasses)
	seen := map[string]bool{}
	for queue := slices.Clone(jars); len(queue) > 0 && len(missing) > 0; queue = queue[1:] {
		j := queue[0]
		if seen[j] {
			continue
		}
		seen[j] = true
		z, err := zip.OpenReader(j)
		if err != nil {
			continue
		}
		missing = slices.DeleteFunc(missing, func(class string) bool {
			_, err := fs.Stat(z, strings.ReplaceAll(class, ".", "/")+".class")
			return err == nil
		})
		queue = append(queue, manifestClassPath(z, filepath.Dir(j))...)
		z.Close()
	}
	return missing
}

// manifestClassPath is the Class-Path of a jar's manifest, each entry
// resolved against dir, the jar's folder.
func manifestClassPath(z *zip.ReadCloser, dir string) []string {
	f, err := z.Open("META-INF/MANIFEST.MF")
	if err != nil {
		return nil
	}
	defer f.Close()
	// A manifest line longer than 72 bytes goes on in the next line,
	// which starts with one space.
	var unfolded []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if rest, ok := strings.CutPrefix(line, " "); ok && len(unfolded) > 0 {
			unfolded[len(unfolded)-1] += rest
			continue
		}
		unfolded = append(unfolded, line)
	}
	for _, line := range unfolded {
		if v, ok := strings.CutPrefix(line, "Class-Path:"); ok {
			var out []string
			for _, e := range strings.Fields(v) {
				if !filepath.IsAbs(e) {
					e = filepath.Join(dir, e)
				}
				out = append(out, e)
			}
			return out
		}
	}
	return nil
}

// checkServerJars refuses a class path (jars, as where says) that lacks
// one of serverClasses.
func checkServerJars(jars []string, where, fix string) error {
	if missing := missingClasses(jars); len(missing) > 0 {
		return fmt.Errorf("no jar of %s holds %s: %s", where, strings.Join(missing, ", "), fix)
	}
	return nil
}
