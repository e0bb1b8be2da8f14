package chaostest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
)

// SSHRig is the test rig of the ssh backend: three "hosts", each a network namespace on a slot of its own
// running Debian's sshd with its own config and host key, plus one
// namespace with no sshd (an unreachable host). The hosts share this
// machine's file system and PID space, as the ssh backend allows.
type SSHRig struct {
	Net   *netns.Network
	Hosts []*netns.Host
	// Dead is a host in the rig's subnet where nothing listens.
	Dead *netns.Host
	// Key is the private key sshd accepts; WrongKey one it does not.
	Key, WrongKey string
	// KnownHosts lists the three hosts' keys.
	KnownHosts string
	// User is the rig's login: not root, with /bin/sh as its shell and
	// exactly the sudo right docs/ssh.md asks for (iptables).
	User string
	// Dir holds the rig's keys and sshd configs.
	Dir string
}

// HostList is the hosts' addresses for --hosts.
func (r *SSHRig) HostList() string {
	ips := make([]string, len(r.Hosts))
	for i, h := range r.Hosts {
		ips[i] = h.IP
	}
	return strings.Join(ips, ",")
}

// Args are the ssh flags of a run against the rig as root.
func (r *SSHRig) Args() []string {
	return []string{"--cluster", "ssh", "--hosts", r.HostList(), "--ssh-user", r.User, "--ssh-key", r.Key, "--ssh-known-hosts", r.KnownHosts}
}

func needRig(t *testing.T) {
	t.Helper()
	NeedRoot(t)
	NeedNetns(t)
	for _, p := range []string{"/usr/sbin/sshd", "/usr/bin/ssh-keygen", "/usr/bin/sudo", "/usr/sbin/useradd", "/usr/sbin/visudo"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs %s (openssh-server, sudo: scripts/install-deps.sh)", p)
		}
	}
}

func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// NewSSHRig starts the rig, holding a run token (NeedNetns) for the
// test's runs on it; everything of it goes when the test ends. It skips
// the test, saying why, without root, namespaces, sshd or sudo.
func NewSSHRig(t *testing.T) *SSHRig {
	t.Helper()
	needRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Not t.TempDir(): its parent is private, and sshd reads
	// authorized_keys as the user who logs in (the no-sudo user too).
	dir, err := os.MkdirTemp("", "zkchaos-sshrig-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &SSHRig{Dir: dir, User: AddUser(t, "zkcrig")}
	sudoers := fmt.Sprintf("/etc/sudoers.d/zkchaos-rig-%d", os.Getpid())
	rule := fmt.Sprintf("%s ALL=(root) NOPASSWD: /usr/sbin/iptables\n", r.User)
	if err := os.WriteFile(sudoers, []byte(rule), 0o440); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(sudoers) })
	mustRun(t, "visudo", "-c", "-q", "-f", sudoers)
	// sshd's privilege separation directory, made as its package would.
	if _, err := os.Stat("/run/sshd"); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove("/run/sshd") })
	}
	n, err := netns.Create(ctx, fmt.Sprintf("sshrig-%d", os.Getpid()), proc.Self(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("rig network: %v", err)
	}
	r.Net = n
	t.Cleanup(func() {
		if err := n.Close(context.Background()); err != nil {
			t.Errorf("remove rig network: %v", err)
		}
	})
	// Removing the rig kills what runs in its namespaces, the runs'
	// watchdogs too: a test that failed with a run's servers up (and the
	// run's controller killed by Start's cleanup) first gives
	// the watchdogs their lease to heal, and what is still left then is
	// removed here and reported.
	before, _ := os.ReadDir(sshBaseDir)
	t.Cleanup(func() { r.sweep(t, before) })
	r.Key, r.WrongKey = filepath.Join(r.Dir, "id"), filepath.Join(r.Dir, "wrong")
	for _, k := range []string{r.Key, r.WrongKey} {
		mustRun(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "zkchaos-rig", "-f", k)
	}
	authorized := filepath.Join(r.Dir, "authorized_keys")
	pub, err := os.ReadFile(r.Key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(authorized, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	var known bytes.Buffer
	for i := 1; i <= 3; i++ {
		h, err := n.AddHost(ctx, fmt.Sprintf("h%d", i))
		if err != nil {
			t.Fatalf("rig host: %v", err)
		}
		r.Hosts = append(r.Hosts, h)
		hostKey, pub := r.hostKeys(t, fmt.Sprintf("host%d", i))
		fmt.Fprintf(&known, "%s %s\n", h.IP, pub)
		r.startSSHD(ctx, t, h, fmt.Sprintf("sshd%d", i), hostKey, "")
	}
	r.KnownHosts = filepath.Join(r.Dir, "known_hosts")
	if err := os.WriteFile(r.KnownHosts, known.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if r.Dead, err = n.AddHost(ctx, "dead"); err != nil {
		t.Fatal(err)
	}
	return r
}

// startSSHD runs Debian's sshd in host h's namespace with its own
// config (named name in the rig's folder) and host keys hostKey (ed25519)
// and hostKey-ecdsa, until the test ends. before, when set, is shell run
// first in the same mount namespace (ip netns exec gives each command
// one of its own), so what it mounts is what the host's sessions see.
func (r *SSHRig) startSSHD(ctx context.Context, t *testing.T, h *netns.Host, name, hostKey, before string) {
	t.Helper()
	cfg := filepath.Join(r.Dir, name+".conf")
	conf := fmt.Sprintf(`ListenAddress %s
Port 22
HostKey %s
HostKey %s-ecdsa
PidFile none
AuthorizedKeysFile %s
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
LogLevel ERROR
`, h.IP, hostKey, hostKey, filepath.Join(r.Dir, "authorized_keys"))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := h.Command(context.Background(), "/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	if before != "" {
		cmd = h.Command(context.Background(), "/bin/sh", "-c", before+"\nexec /usr/sbin/sshd -D -e -f "+cfg)
	}
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if err := waitListen(ctx, net.JoinHostPort(h.IP, "22")); err != nil {
		t.Fatalf("sshd on %s: %v\n%s", h.IP, err, se.String())
	}
}

// hostKeys makes a host's two keys, name (ed25519) and name-ecdsa, in
// the rig's folder, and returns the first's path and its known_hosts
// fields ("type key"). known_hosts lists only the ed25519 one: the
// handshake must ask for the kind of key known_hosts holds
// (golang.org/x/crypto/ssh prefers ECDSA).
func (r *SSHRig) hostKeys(t *testing.T, name string) (path, pub string) {
	t.Helper()
	path = filepath.Join(r.Dir, name)
	mustRun(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path)
	mustRun(t, "ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", path+"-ecdsa")
	b, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	return path, f[0] + " " + f[1]
}

// AddBareHost starts a fourth host whose sessions see an empty
// /usr/share/java (a tmpfs mounted in its sshd's own mount namespace): a
// host without the ZooKeeper jars, as a fresh machine is. known_hosts
// lists it too; TestSSH's runs never use it.
func (r *SSHRig) AddBareHost(t *testing.T) *netns.Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := r.Net.AddHost(ctx, "bare")
	if err != nil {
		t.Fatalf("rig host: %v", err)
	}
	hostKey, pub := r.hostKeys(t, "hostbare")
	r.startSSHD(ctx, t, h, "sshdbare", hostKey, "mount --make-rprivate / && mount -t tmpfs -o size=1m zkchaos-bare /usr/share/java || exit 1")
	kh, err := os.OpenFile(r.KnownHosts, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer kh.Close()
	if _, err := fmt.Fprintf(kh, "%s %s\n", h.IP, pub); err != nil {
		t.Fatal(err)
	}
	return h
}

// AddUser adds a user named prefix<pid> with no password (it logs in by
// key only), /bin/sh as its shell and no sudo right, removed when the
// test ends.
func AddUser(t *testing.T, prefix string) string {
	t.Helper()
	user := fmt.Sprintf("%s%d", prefix, os.Getpid()%100000)
	mustRun(t, "useradd", "-M", "-d", "/tmp", "-s", "/bin/sh", "-p", "*", user)
	t.Cleanup(func() {
		// userdel refuses a user who still has a process, and the
		// user's last session (sshd's child for it) may still be ending
		// after the client has gone: seen on a loaded machine.
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if exec.Command("pgrep", "-u", user).Run() != nil {
				break
			}
		}
		if out, err := exec.Command("userdel", user).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v\n%s", user, err, out)
		}
	})
	return user
}

func waitListen(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sshBaseDir is where runs keep their servers' directories on the hosts
// (cluster/ssh.BaseDir), on this machine's file system here.
const sshBaseDir = "/var/tmp/zkchaos"

// sweep waits for the hosts to be clean of runs made since before, then
// removes and reports whatever is left.
func (r *SSHRig) sweep(t *testing.T, before []os.DirEntry) {
	had := map[string]bool{}
	for _, e := range before {
		had[e.Name()] = true
	}
	var left []string
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if left = r.LeftOnHosts(""); len(left) == 0 {
			return
		}
	}
	for _, l := range left {
		t.Errorf("left on the rig at its end (removed now): %s", l)
	}
	ents, _ := os.ReadDir(sshBaseDir)
	for _, e := range ents {
		if !had[e.Name()] {
			os.RemoveAll(filepath.Join(sshBaseDir, e.Name()))
		}
	}
}

// LeftOnHosts lists what run runID (every run when "") left on the rig's
// hosts: rules of a zkchaos chain in a host's iptables, a process whose
// command line names the run's directory (a JVM, a watchdog; paused
// ones said so), the run's directory; a host whose rules cannot be read
// is reported too.
func (r *SSHRig) LeftOnHosts(runID string) []string {
	var left []string
	chain, dir := "ZKCHAOS-"+runID, sshBaseDir+"/"+runID
	for _, h := range r.Hosts {
		out, err := h.Command(context.Background(), "iptables", "-w", "-S").CombinedOutput()
		if err != nil {
			left = append(left, fmt.Sprintf("host %s: iptables: %v: %s", h.IP, err, out))
			continue
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, chain) {
				left = append(left, fmt.Sprintf("host %s: iptables %s", h.IP, l))
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		st, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
		state := ""
		if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) {
			state = string(st[i+2])
		}
		if state == "Z" {
			continue
		}
		left = append(left, fmt.Sprintf("process %d (state %s): %s", pid, state, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	if runID != "" {
		if _, err := os.Stat(dir); err == nil {
			left = append(left, "directory "+dir)
		}
	} else if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		left = append(left, fmt.Sprintf("directory %s holds %d entries", dir, len(ents)))
	}
	return left
}
