// Package image builds the ZooKeeper image of the docker backend offline:
// a Debian root file system made by mmdebstrap from Debian's own packages
// (OpenJDK 17, libzookeeper-java, an SLF4J binding, iproute2, iptables,
// procps), imported into the engine with the official image's entrypoint
// conventions. No image is ever pulled: this machine reaches no registry,
// and an image nobody pulled is one whose every byte came from the same
// Debian packages the local backend runs.
package image

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Repository is the name every image of the harness is tagged under.
const Repository = "zkchaos/zookeeper"

// zkPackage is the Debian package whose version names the image.
const zkPackage = "libzookeeper-java"

// Spec is what an image is built from: a Debian suite, and the ZooKeeper
// version that suite's apt sources offer.
type Spec struct {
	// Suite is a Debian codename ("bookworm").
	Suite string
	// ZKPackageVersion is the Debian version of libzookeeper-java
	// ("3.8.0-11+deb12u2").
	ZKPackageVersion string
}

// Tag is zkchaos/zookeeper:<zk version>-<suite>, e.g.
// zkchaos/zookeeper:3.8.0-bookworm: what a user would ask for, and what
// says whether an image must be rebuilt.
func (s Spec) Tag() string {
	return fmt.Sprintf("%s:%s-%s", Repository, Upstream(s.ZKPackageVersion), s.Suite)
}

// Upstream strips a Debian version's epoch and revision: "1:3.8.0-11+x" is
// 3.8.0.
func Upstream(v string) string {
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndexByte(v, '-'); i > 0 {
		v = v[:i]
	}
	return v
}

// Detect reads the spec off this machine: the suite from /etc/os-release
// and the ZooKeeper version apt would install from the machine's sources,
// which are also the sources the image is built from.
func Detect(ctx context.Context) (Spec, error) {
	suite, err := hostSuite("/etc/os-release")
	if err != nil {
		return Spec{}, err
	}
	v, err := candidate(ctx, zkPackage)
	if err != nil {
		return Spec{}, err
	}
	return Spec{Suite: suite, ZKPackageVersion: v}, nil
}

func hostSuite(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("debian suite: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VERSION_CODENAME="); ok && strings.Trim(v, `"`) != "" {
			return strings.Trim(v, `"`), nil
		}
	}
	return "", fmt.Errorf("debian suite: no VERSION_CODENAME in %s (the image is built from Debian packages: build it on Debian)", path)
}

// candidate is the version `apt-cache policy` would install.
func candidate(ctx context.Context, pkg string) (string, error) {
	out, err := exec.CommandContext(ctx, "apt-cache", "policy", pkg).Output()
	if err != nil {
		return "", fmt.Errorf("apt-cache policy %s: %w (the image is built from Debian packages: build it on Debian)", pkg, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Candidate:"); ok {
			v = strings.TrimSpace(v)
			if v == "" || v == "(none)" {
				break
			}
			return v, nil
		}
	}
	return "", fmt.Errorf("apt knows no version of %s (run apt-get update)", pkg)
}
