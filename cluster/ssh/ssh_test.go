package ssh

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"
)

func TestParseHosts(t *testing.T) {
	hs, err := ParseHosts(" h1, 10.0.0.2 ,h3,")
	if err != nil || strings.Join(hs, "|") != "h1|10.0.0.2|h3" {
		t.Errorf("ParseHosts = %q, %v", hs, err)
	}
	for _, bad := range []string{"", " , ", "h1,h1", "root@h1", "h1:22", "h 1", "h'1"} {
		if _, err := ParseHosts(bad); err == nil {
			t.Errorf("ParseHosts(%q) accepted", bad)
		}
	}
}

// TestScriptsParse: every script the backend sends is valid sh.
func TestScriptsParse(t *testing.T) {
	scripts := map[string]string{
		"check":    checkScript(false),
		"install":  checkScript(true),
		"heal":     healScript("/var/tmp/zkchaos/r/n1", "ZKCHAOS-r"),
		"watchdog": watchdogScript("/var/tmp/zkchaos/r/n1", "ZKCHAOS-r", LeasePeriod),
		"proc":     procScript,
		"find":     findPid + "echo $pid",
		"lease":    leaseLoop,
	}
	for name, s := range scripts {
		if out, err := exec.Command("sh", "-n", "-c", s).CombinedOutput(); err != nil {
			t.Errorf("%s script: %v\n%s\n%s", name, err, out, s)
		}
	}
}

// TestWatchdogHeals runs the watchdog loop here, with iptables replaced
// by a function that records its calls, against a stand-in server (a
// shell whose command line names the directory's zoo.cfg, stopped by
// SIGSTOP as a paused server is): while the lease is fresh nothing
// happens; once it is older than the period the server is killed even
// though it is stopped, the chain removed, and the directory gone.
func TestWatchdogHeals(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run", "n1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(base, "iptables.log")
	server := exec.Command("sh", "-c", "sleep 600; true", dir+"/zoo.cfg")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = server.Wait(); close(exited) }()
	t.Cleanup(func() { _ = server.Process.Kill() })
	if err := server.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	lease := filepath.Join(dir, "lease")
	if err := os.WriteFile(lease, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The stub's -D fails as iptables' does once no jump is left.
	stub := "iptables() { echo \"$*\" >>" + Quote(log) + "; case \"$*\" in *' -D '*) return 1;; esac; }\n"
	wd := exec.Command("sh", "-c", stub+watchdogScript(dir, "ZKCHAOS-test", 2*time.Second))
	if err := wd.Start(); err != nil {
		t.Fatal(err)
	}
	wdDone := make(chan struct{})
	go func() { _ = wd.Wait(); close(wdDone) }()
	t.Cleanup(func() { _ = wd.Process.Kill() })

	// Fresh lease for 4 s: the server stays.
	var last time.Time
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		last = time.Now()
		if err := os.Chtimes(lease, last, last); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-exited:
		t.Fatal("server killed while the lease was fresh")
	default:
	}
	select {
	case <-exited:
	case <-time.After(6 * time.Second):
		t.Fatal("stopped server still alive 6 s after the last refresh of a 2 s lease")
	}
	took := time.Since(last)
	t.Logf("healed %s after the last refresh (lease 2 s)", took.Round(100*time.Millisecond))
	if took < 2*time.Second {
		t.Errorf("healed %s after the last refresh, before the 2 s lease ran out", took)
	}
	select {
	case <-wdDone:
	case <-time.After(3 * time.Second):
		t.Error("watchdog still running after healing")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("server directory left: %v", err)
	}
	calls, _ := os.ReadFile(log)
	for _, want := range []string{"-w -D INPUT -j ZKCHAOS-test", "-w -F ZKCHAOS-test", "-w -X ZKCHAOS-test"} {
		if !strings.Contains(string(calls), want) {
			t.Errorf("iptables not called with %q; calls:\n%s", want, calls)
		}
	}
}

// TestHostKeyAlgorithms: the handshake asks for the kinds of key
// known_hosts holds for the host (RSA as its SHA-2 signatures first),
// nothing for a host it does not list.
func TestHostKeyAlgorithms(t *testing.T) {
	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	var lines []string
	for _, k := range []struct{ typ, host string }{{"ed25519", "zk1"}, {"rsa", "zk1"}, {"ecdsa", "zk2"}} {
		f := filepath.Join(dir, k.typ+k.host)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", k.typ, "-N", "", "-f", f).CombinedOutput(); err != nil {
			t.Skipf("ssh-keygen: %v %s", err, out)
		}
		pub, err := os.ReadFile(f + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		fs := strings.Fields(string(pub))
		lines = append(lines, k.host+" "+fs[0]+" "+fs[1])
	}
	if err := os.WriteFile(known, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cb, err := knownhosts.New(known)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(hostKeyAlgorithms(cb, "zk1:22"), ","); got != "ssh-ed25519,rsa-sha2-512,rsa-sha2-256,ssh-rsa" {
		t.Errorf("zk1: %s", got)
	}
	if got := strings.Join(hostKeyAlgorithms(cb, "zk2:22"), ","); got != "ecdsa-sha2-nistp256" {
		t.Errorf("zk2: %s", got)
	}
	if got := hostKeyAlgorithms(cb, "zk3:22"); got != nil {
		t.Errorf("zk3 (unknown): %q", got)
	}
}
