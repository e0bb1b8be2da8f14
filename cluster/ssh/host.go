// Package ssh is the backend of an ensemble on remote hosts the user
// names (--cluster ssh --hosts h1,h2,h3), driven over SSH as Jepsen
// drives its nodes: every server verb is a shell command run on the
// server's host (iptables through sudo -n when the user is not root), every fault is
// verified there, and a watchdog on each host heals it when the
// controller stops refreshing its lease (watchdog.go), so a killed
// controller or a lost link leaves nothing behind for longer than the
// lease. Only this package knows hosts, remote PIDs and remote iptables.
package ssh

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/zkchaos/zkchaos/internal/setting"
)

// Auth is how the controller logs in to every host: a user, a port, a
// private key (a file, or the agent at SSH_AUTH_SOCK when empty) and the
// known_hosts file that must list every host's key. There is no
// password, anywhere.
type Auth struct {
	User       string
	Port       int
	KeyFile    string
	KnownHosts string
}

// DefaultPort is ssh's.
const DefaultPort = 22

// dialTimeout bounds the TCP connection and the SSH handshake.
const dialTimeout = 10 * time.Second

func (a Auth) withDefaults() (Auth, error) {
	if a.User == "" {
		u := os.Getenv("USER")
		if u == "" {
			return a, fmt.Errorf("no %s and no $USER", setting.Name("SSHUser"))
		}
		a.User = u
	}
	if a.Port == 0 {
		a.Port = DefaultPort
	}
	if a.KnownHosts == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return a, fmt.Errorf("known_hosts: %w", err)
		}
		a.KnownHosts = filepath.Join(home, ".ssh", "known_hosts")
	}
	return a, nil
}

// clientConfig reads the key (or reaches the agent) and the known_hosts
// file once for every host.
func (a Auth) clientConfig() (*ssh.ClientConfig, func(), error) {
	hostKeys, err := knownhosts.New(a.KnownHosts)
	if err != nil {
		return nil, nil, fmt.Errorf("known hosts file %s: %w", a.KnownHosts, err)
	}
	cleanup := func() {}
	var method ssh.AuthMethod
	if a.KeyFile != "" {
		pem, err := os.ReadFile(a.KeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", setting.Name("SSHKey"), err)
		}
		signer, err := ssh.ParsePrivateKey(pem)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w (a key with a passphrase must be loaded into ssh-agent instead)", setting.Name("SSHKey"), a.KeyFile, err)
		}
		method = ssh.PublicKeys(signer)
	} else {
		sock := os.Getenv("SSH_AUTH_SOCK")
		if sock == "" {
			return nil, nil, fmt.Errorf("no %s and no SSH_AUTH_SOCK: give a private key file or run an ssh-agent", setting.Name("SSHKey"))
		}
		conn, err := net.Dial("unix", sock)
		if err != nil {
			return nil, nil, fmt.Errorf("ssh-agent at SSH_AUTH_SOCK: %w", err)
		}
		cleanup = func() { conn.Close() }
		method = ssh.PublicKeysCallback(agent.NewClient(conn).Signers)
	}
	return &ssh.ClientConfig{
		User:            a.User,
		Auth:            []ssh.AuthMethod{method},
		HostKeyCallback: hostKeys,
		Timeout:         dialTimeout,
	}, cleanup, nil
}

// Host is one SSH connection to a server's host; every command of the
// backend on that host goes through it, each in a session of its own.
type Host struct {
	// Name is the host as the user named it.
	Name string
	// IP is the address the connection reached: the other servers and
	// the relays reach the server there, and partitions cut it.
	IP   string
	user string
	// sudo: the user is not root, and runs iptables and apt-get through
	// sudo -n.
	sudo   bool
	client *ssh.Client
}

// HostError is a failure on one host: it names the host first, since
// with several hosts the user must know which to fix.
type HostError struct {
	Host string
	Err  error
}

func (e *HostError) Error() string { return fmt.Sprintf("host %s: %v", e.Host, e.Err) }
func (e *HostError) Unwrap() error { return e.Err }

// dial connects to name and checks that the user may run iptables as
// root without a password (sudo -n) unless it is root.
func dial(ctx context.Context, name string, a Auth, cfg *ssh.ClientConfig) (*Host, error) {
	addr := net.JoinHostPort(name, strconv.Itoa(a.Port))
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &HostError{name, fmt.Errorf("unreachable: %w", err)}
	}
	_ = conn.SetDeadline(time.Now().Add(dialTimeout))
	hc := *cfg
	hc.HostKeyAlgorithms = hostKeyAlgorithms(cfg.HostKeyCallback, addr)
	sc, chans, reqs, err := ssh.NewClientConn(conn, addr, &hc)
	if err != nil {
		conn.Close()
		return nil, &HostError{name, handshakeError(err, a)}
	}
	_ = conn.SetDeadline(time.Time{})
	ip, _, _ := net.SplitHostPort(conn.RemoteAddr().String())
	h := &Host{Name: name, IP: ip, user: a.User, client: ssh.NewClient(sc, chans, reqs)}
	out, err := h.run(ctx, "id -u", nil)
	if err != nil {
		h.Close()
		return nil, &HostError{name, err}
	}
	if strings.TrimSpace(out) != "0" {
		h.sudo = true
		if out, err := h.run(ctx, "sudo -n iptables -w -S >/dev/null", nil); err != nil {
			h.Close()
			why := strings.TrimSpace(out)
			var ee *ssh.ExitError
			if why == "" && errors.As(err, &ee) {
				why = fmt.Sprintf("exit status %d", ee.ExitStatus())
			} else if why == "" {
				why = err.Error()
			}
			return nil, &HostError{name, fmt.Errorf("user %s may not run iptables as root without a password (sudo -n iptables -w -S: %s): see docs/ssh.md for the sudo rights the backend needs", a.User, why)}
		}
	}
	return h, nil
}

// hostKeyAlgorithms lists the algorithms of the keys known_hosts holds
// for addr (nil when it holds none), so the handshake asks the host for a
// key known_hosts can check: otherwise a host with several keys may offer
// one known_hosts does not list (its ecdsa key when known_hosts has its
// ed25519 one), and be refused as a changed host. The keys are found by
// asking the callback about a key no host has: its KeyError lists the
// keys it wanted.
func hostKeyAlgorithms(cb ssh.HostKeyCallback, addr string) []string {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil
	}
	probe, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if !errors.As(cb(addr, &net.TCPAddr{IP: net.IPv4zero}, probe), &ke) {
		return nil
	}
	var algos []string
	for _, k := range ke.Want {
		t := k.Key.Type()
		if t == ssh.KeyAlgoRSA {
			// An RSA key is signed with SHA-2 by current servers.
			algos = append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256)
		}
		if !slices.Contains(algos, t) {
			algos = append(algos, t)
		}
	}
	return algos
}

// handshakeError says in words which of the usual causes failed.
func handshakeError(err error, a Auth) error {
	var ke *knownhosts.KeyError
	switch {
	case errors.As(err, &ke) && len(ke.Want) == 0:
		return fmt.Errorf("host key not in %s (unknown host: add it with ssh-keyscan after checking its fingerprint): %w", a.KnownHosts, err)
	case errors.As(err, &ke):
		return fmt.Errorf("host key does not match %s (changed or spoofed host): %w", a.KnownHosts, err)
	case strings.Contains(err.Error(), "unable to authenticate"):
		return fmt.Errorf("user %s: key refused (not in the host's authorized_keys?): %w", a.User, err)
	}
	return fmt.Errorf("ssh handshake: %w", err)
}

func firstLine(out string, err error) string {
	if l := strings.TrimSpace(strings.SplitN(strings.TrimSpace(out), "\n", 2)[0]); l != "" {
		return l
	}
	return err.Error()
}

// Close ends the connection.
func (h *Host) Close() error { return h.client.Close() }

// Run runs script with sh on the host as the login user, with stdin when
// not nil, and returns what it printed, stdout and stderr together. A
// non-zero exit is an error carrying that output; ctx's end closes the
// session. Only iptables (and apt-get for --install) need root: the
// script's iptables and apt-get go through sudo -n when the user is not
// root (the preamble), and everything else (the server's files, its JVM,
// the signals to it, the watchdog) is the user's own.
func (h *Host) Run(ctx context.Context, script string, stdin []byte) (string, error) {
	out, err := h.runAs(ctx, "sh -c "+Quote(h.preamble()+script), short(script), stdin)
	if err != nil {
		return out, &HostError{h.Name, err}
	}
	return out, nil
}

// preamble makes iptables and apt-get go through sudo -n for a user who
// is not root.
func (h *Host) preamble() string {
	if !h.sudo {
		return "apt_get() { apt-get \"$@\"; }\n"
	}
	return "iptables() { sudo -n iptables \"$@\"; }\napt_get() { sudo -n apt-get \"$@\"; }\n"
}

func (h *Host) run(ctx context.Context, cmd string, stdin []byte) (string, error) {
	return h.runAs(ctx, cmd, short(cmd), stdin)
}

// runAs runs cmd; its errors call it label.
func (h *Host) runAs(ctx context.Context, cmd, label string, stdin []byte) (string, error) {
	s, err := h.client.NewSession()
	if err != nil {
		return "", fmt.Errorf("new ssh session: %w", err)
	}
	defer s.Close()
	// One writer for both streams, which the session copies from two
	// goroutines.
	var out syncBuffer
	s.Stdout, s.Stderr = &out, &out
	if stdin != nil {
		s.Stdin = bytes.NewReader(stdin)
	}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	err = s.Run(cmd)
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("%s: %w", label, ctx.Err())
	}
	if err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", label, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// short is a command for an error message: its first line, cut.
func short(cmd string) string {
	l, _, _ := strings.Cut(cmd, "\n")
	if len(l) > 80 {
		l = l[:80] + "…"
	}
	return l
}

// Quote makes s one shell word.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Feed runs script on the host and writes a line to its stdin every
// period until ctx ends (then closes the session) or the script or the
// connection fails.
func (h *Host) Feed(ctx context.Context, script string, period time.Duration) error {
	s, err := h.client.NewSession()
	if err != nil {
		return fmt.Errorf("new ssh session: %w", err)
	}
	defer s.Close()
	in, err := s.StdinPipe()
	if err != nil {
		return err
	}
	if err := s.Start("sh -c " + Quote(h.preamble()+script)); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if _, err := in.Write([]byte("\n")); err != nil {
			return fmt.Errorf("lease session: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			return fmt.Errorf("lease session ended: %v", err)
		case <-t.C:
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
