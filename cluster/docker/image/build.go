package image

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Packages are what the image holds beyond Debian's essential set: the
// JRE, ZooKeeper's jars, an SLF4J binding (slf4j-simple) so the server
// logs, and the tools the backend execs inside a container (iptables for
// partitions, ps to verify a pause, ip to look at the network).
var Packages = []string{
	"openjdk-17-jre-headless", zkPackage, "libslf4j-java",
	"iproute2", "iptables", "procps",
}

// Options of a build.
type Options struct {
	// Force rebuilds even when the tag exists.
	Force bool
	// Sources are apt source files (sources.list or deb822) for
	// mmdebstrap; empty means this machine's, which are also what the
	// tag's version was read from.
	Sources []string
	// Output receives mmdebstrap's progress lines; nil discards them
	// (their end is still in the error of a failed build).
	Output io.Writer
	Logger *slog.Logger
}

// Result says what Build did.
type Result struct {
	Tag, ID string
	// Built is false when the tag existed and nothing was done.
	Built bool
	// Took is the whole build, mmdebstrap and import.
	Took time.Duration
	// Size is the image's size in bytes as the engine reports it.
	Size int64
}

// Lookup returns the image's ID and size, or found false when the engine
// has no image of that tag. It never pulls.
func Lookup(ctx context.Context, cli *testcontainers.DockerClient, tag string) (id string, size int64, found bool, err error) {
	r, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return "", 0, false, nil
		}
		return "", 0, false, fmt.Errorf("inspect image %s: %w", tag, err)
	}
	return r.ID, r.Size, true, nil
}

// Build makes the image of this machine's spec unless its tag exists (or
// opts.Force): mmdebstrap writes a root file system tarball from Debian's
// packages, and the engine imports it with the entrypoint, environment and
// default command set. A failed build leaves no image under the tag.
func Build(ctx context.Context, cli *testcontainers.DockerClient, opts Options) (Result, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	spec, err := Detect(ctx)
	if err != nil {
		return Result{}, err
	}
	res := Result{Tag: spec.Tag()}
	unlock, err := buildLock(ctx)
	if err != nil {
		return res, fmt.Errorf("build %s: %w", res.Tag, err)
	}
	defer unlock()
	oldID, size, found, err := Lookup(ctx, cli, res.Tag)
	if err != nil {
		return res, err
	}
	if found && !opts.Force {
		res.ID, res.Size = oldID, size
		return res, nil
	}
	start := time.Now()
	dir, err := os.MkdirTemp("", "zkchaos-image-")
	if err != nil {
		return res, fmt.Errorf("build %s: %w", res.Tag, err)
	}
	defer os.RemoveAll(dir)
	opts.Logger.Info("building image", "tag", res.Tag, "suite", spec.Suite, "zookeeper", spec.ZKPackageVersion)
	tarball, err := rootfs(ctx, dir, spec, opts)
	if err != nil {
		return res, fmt.Errorf("build %s: %w", res.Tag, err)
	}
	if err := importTar(ctx, cli, tarball, spec); err != nil {
		return res, fmt.Errorf("build %s: %w", res.Tag, err)
	}
	res.Built, res.Took = true, time.Since(start)
	if res.ID, res.Size, _, err = Lookup(ctx, cli, res.Tag); err != nil {
		return res, err
	}
	if found && oldID != res.ID {
		// The previous image lost its tag; remove it unless a container
		// still uses it (then it stays, untagged, and says so).
		if _, err := cli.ImageRemove(ctx, oldID, client.ImageRemoveOptions{}); err != nil {
			opts.Logger.Warn("previous image kept", "id", oldID, "err", err)
		}
	}
	return res, nil
}

// lockPath is the machine-wide build lock (a variable for tests).
var lockPath = filepath.Join(os.TempDir(), "zkchaos-image-build.lock")

// buildLock serialises builds on this machine (two test packages of one
// `go test ./...` may both want the image): the second waits, then finds
// the tag and skips, instead of building it twice and leaving an untagged
// copy behind. Waiting ends with ctx.
func buildLock(ctx context.Context) (unlock func(), err error) {
	p := lockPath
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("build lock %s: %w", p, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another image build (%s): %w", p, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// rootfs runs mmdebstrap and returns the tarball's path. It checks that
// the ZooKeeper inside is the version the tag names.
func rootfs(ctx context.Context, dir string, spec Spec, opts Options) (string, error) {
	mm, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return "", fmt.Errorf("mmdebstrap not found (apt-get install mmdebstrap, or make deps): %w", err)
	}
	sources := opts.Sources
	if len(sources) == 0 {
		if sources, err = hostSources(); err != nil {
			return "", err
		}
	}
	scripts := map[string]string{"docker-entrypoint.sh": entrypoint, "zkServer.sh": serverScript()}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			return "", err
		}
	}
	tarball, versionFile := filepath.Join(dir, "rootfs.tar"), filepath.Join(dir, "zk-version")
	args := mmdebstrapArgs(dir, versionFile, spec.Suite, tarball, sources)
	var tail bytes.Buffer
	cmd := exec.CommandContext(ctx, mm, args...)
	out := io.Writer(&tail)
	if opts.Output != nil {
		out = io.MultiWriter(&tail, opts.Output)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// mmdebstrap mounts /proc, /sys and /dev into its chroot: an interrupt
	// lets it unmount and remove its own temporary directory, a SIGKILL
	// would not.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mmdebstrap: %w: %s", err, lastLines(tail.String(), 15))
	}
	got, err := os.ReadFile(versionFile)
	if err != nil {
		return "", fmt.Errorf("read the image's %s version: %w", zkPackage, err)
	}
	if v := strings.TrimSpace(string(got)); v != spec.ZKPackageVersion {
		return "", fmt.Errorf("the image got %s %s, but apt on this machine offers %s: its sources differ from the image's", zkPackage, v, spec.ZKPackageVersion)
	}
	return tarball, nil
}

// mmdebstrapArgs is the whole command line. The setup hook creates the
// directory openjdk's postinst registers its man pages in (the essential
// variant has none, man pages are not installed, and the postinst fails
// without it); the customize
// hooks put the two scripts in, make the official image's volumes, and
// read the ZooKeeper version installed.
func mmdebstrapArgs(dir, versionFile, suite, tarball string, sources []string) []string {
	args := []string{
		"--variant=essential",
		"--include=" + strings.Join(Packages, ","),
		`--setup-hook=mkdir -p "$1/usr/share/man/man1"`,
		// Documentation and translations are a sixth of the size and
		// nothing here reads them; copyright files stay.
		"--dpkgopt=path-exclude=/usr/share/man/*",
		"--dpkgopt=path-exclude=/usr/share/locale/*",
		"--dpkgopt=path-exclude=/usr/share/doc/*",
		"--dpkgopt=path-include=/usr/share/doc/*/copyright",
		"--customize-hook=upload " + filepath.Join(dir, "docker-entrypoint.sh") + " " + EntrypointPath,
		"--customize-hook=upload " + filepath.Join(dir, "zkServer.sh") + " " + ServerPath,
		`--customize-hook=chmod 0755 "$1` + EntrypointPath + `" "$1` + ServerPath + `"`,
		// World-writable like /tmp, so a container run with --user can
		// write its configuration and data when nothing is mounted there.
		`--customize-hook=mkdir -p -m 1777 "$1/conf" "$1/data" "$1/datalog"`,
		`--customize-hook=chroot "$1" dpkg-query -W -f='${Version}' ` + zkPackage + " > " + shellQuote(versionFile),
		suite, tarball,
	}
	return append(args, sources...)
}

// hostSources are this machine's apt source files, so that the image gets
// the same package versions (security updates included) as the host.
func hostSources() ([]string, error) {
	var out []string
	if fi, err := os.Stat("/etc/apt/sources.list"); err == nil && fi.Size() > 0 {
		out = append(out, "/etc/apt/sources.list")
	}
	for _, pat := range []string{"/etc/apt/sources.list.d/*.list", "/etc/apt/sources.list.d/*.sources"} {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	if len(out) == 0 {
		return nil, errors.New("no apt sources on this machine (/etc/apt/sources.list, /etc/apt/sources.list.d/)")
	}
	return out, nil
}

// Changes are the image's configuration, as docker import --change takes
// it. No VOLUME either: anonymous volumes would outlive a container that
// docker-compose down removes.
func Changes(spec Spec) []string {
	var ch []string
	for _, e := range Env {
		ch = append(ch, "ENV "+e)
	}
	q := func(ss []string) string { b, _ := json.Marshal(ss); return string(b) }
	return append(ch,
		"ENTRYPOINT "+q([]string{EntrypointPath}),
		"CMD "+q(Cmd),
		"WORKDIR /",
		// No EXPOSE: testcontainers-go publishes every exposed port on the
		// host's addresses, and the servers must be reachable only on the
		// run's network.
		fmt.Sprintf("LABEL zkchaos.zookeeper=%q zkchaos.suite=%q", spec.ZKPackageVersion, spec.Suite),
	)
}

// importTar is docker import: the engine reads the tarball from the
// request body (fromSrc "-"), which never contacts a registry.
func importTar(ctx context.Context, cli *testcontainers.DockerClient, tarball string, spec Spec) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: f, SourceName: "-"}, spec.Tag(),
		client.ImageImportOptions{Changes: Changes(spec), Message: "zkchaos image build"})
	if err != nil {
		return fmt.Errorf("docker import: %w", err)
	}
	defer rc.Close()
	// The engine answers with a stream of JSON messages; a failure is one
	// of them, not an HTTP status.
	dec := json.NewDecoder(rc)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("docker import: read answer: %w", err)
		}
		if m.Error != "" {
			return fmt.Errorf("docker import: %s", m.Error)
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
