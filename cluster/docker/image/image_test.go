package image

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster/zkjvm"
)

// The generated zkServer.sh, run by a real sh with a stand-in java that
// prints its arguments, must hand the JVM exactly zkjvm's command line
// (quotes included), JVMFLAGS split into words, and the config in
// $ZOO_CONF_DIR, and refuse anything but start-foreground.
func TestServerScriptExecsTheSharedCommandLine(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "zkServer.sh")
	if err := os.WriteFile(script, []byte(serverScript()), 0o755); err != nil {
		t.Fatal(err)
	}
	java := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"
	if err := os.WriteFile(filepath.Join(dir, "java"), []byte(java), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", script, "start-foreground")
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "ZOO_CONF_DIR=/conf dir", "JVMFLAGS=-Da=1 -Db=2"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zkServer.sh: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	want := append(zkjvm.Flags(), "-Da=1", "-Db=2", "-cp", zkjvm.DebianClassPath, zkjvm.MainClass, "/conf dir/zoo.cfg")
	if !slices.Equal(got, want) {
		t.Errorf("java got\n%q\nwant\n%q", got, want)
	}
	cmd = exec.Command("sh", script, "start")
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "only start-foreground") {
		t.Errorf("zkServer.sh start: %v, %q; want a refusal", err, out)
	}
}

// The entrypoint writes zoo.cfg and myid from the official variables, then
// execs the command; a second start keeps both (a restarted server keeps
// its identity), as the official image does.
func TestEntrypointWritesConfigOnceAndExecs(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "docker-entrypoint.sh")
	if err := os.WriteFile(script, []byte(entrypoint), 0o755); err != nil {
		t.Fatal(err)
	}
	conf, data := filepath.Join(dir, "conf"), filepath.Join(dir, "data")
	for _, d := range []string{conf, data} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(slices.Clone(Env), "ZOO_CONF_DIR="+conf, "ZOO_DATA_DIR="+data,
		"ZOO_MY_ID=2", "ZOO_TICK_TIME=200",
		"ZOO_SERVERS=server.1=198.19.192.2:2888:3888;2181 server.2=198.19.192.3:2888:3888;2181",
		"ZOO_4LW_COMMANDS_WHITELIST=*", "ZOO_CFG_EXTRA=forceSync=no maxSessionTimeout=9000")
	run := func(env []string) string {
		t.Helper()
		cmd := exec.Command("sh", script, "sh", "-c", "echo exec:$0", "ok")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("entrypoint: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := run(env); out != "exec:ok" {
		t.Errorf("entrypoint ran the command as %q, want exec:ok", out)
	}
	cfg, err := os.ReadFile(filepath.Join(conf, "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"dataDir=" + data, "dataLogDir=/datalog", "tickTime=200", "initLimit=5", "admin.enableServer=false",
		"server.1=198.19.192.2:2888:3888;2181", "server.2=198.19.192.3:2888:3888;2181",
		"4lw.commands.whitelist=*", "forceSync=no", "maxSessionTimeout=9000",
	} {
		if !slices.Contains(strings.Split(string(cfg), "\n"), line) {
			t.Errorf("zoo.cfg lacks %q:\n%s", line, cfg)
		}
	}
	if id, _ := os.ReadFile(filepath.Join(data, "myid")); string(id) != "2\n" {
		t.Errorf("myid = %q, want 2", id)
	}
	run(append(env, "ZOO_MY_ID=3", "ZOO_TICK_TIME=999"))
	if id, _ := os.ReadFile(filepath.Join(data, "myid")); string(id) != "2\n" {
		t.Errorf("myid after a second start = %q, want it kept as 2", id)
	}
	if again, _ := os.ReadFile(filepath.Join(conf, "zoo.cfg")); string(again) != string(cfg) {
		t.Errorf("zoo.cfg rewritten by a second start:\n%s", again)
	}
	if _, err := os.Stat(filepath.Join(conf, "zoo.cfg.tmp")); err == nil {
		t.Error("zoo.cfg.tmp left behind")
	}
}

func TestTagAndUpstream(t *testing.T) {
	for v, want := range map[string]string{"3.8.0-11+deb12u2": "3.8.0", "1:3.9.2-1": "3.9.2", "3.8.0": "3.8.0"} {
		if got := Upstream(v); got != want {
			t.Errorf("Upstream(%q) = %q, want %q", v, got, want)
		}
	}
	if got := (Spec{Suite: "bookworm", ZKPackageVersion: "3.8.0-11+deb12u2"}).Tag(); got != "zkchaos/zookeeper:3.8.0-bookworm" {
		t.Errorf("Tag = %q", got)
	}
	p := filepath.Join(t.TempDir(), "os-release")
	os.WriteFile(p, []byte("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nVERSION_CODENAME=bookworm\n"), 0o644)
	if s, err := hostSuite(p); err != nil || s != "bookworm" {
		t.Errorf("hostSuite = %q, %v", s, err)
	}
	os.WriteFile(p, []byte("ID=alpine\n"), 0o644)
	if _, err := hostSuite(p); err == nil || !strings.Contains(err.Error(), "VERSION_CODENAME") {
		t.Errorf("hostSuite without a codename: %v, want an error naming VERSION_CODENAME", err)
	}
}

// The import's configuration carries the official entrypoint and command
// and no EXPOSE (testcontainers-go would publish exposed ports on the
// host).
func TestChanges(t *testing.T) {
	ch := Changes(Spec{Suite: "bookworm", ZKPackageVersion: "3.8.0-11+deb12u2"})
	for _, want := range []string{`ENTRYPOINT ["/docker-entrypoint.sh"]`, `CMD ["zkServer.sh","start-foreground"]`, "ENV ZOO_CONF_DIR=/conf"} {
		if !slices.Contains(ch, want) {
			t.Errorf("changes lack %q: %q", want, ch)
		}
	}
	for _, c := range ch {
		if strings.HasPrefix(c, "EXPOSE") || strings.HasPrefix(c, "VOLUME") {
			t.Errorf("change %q would publish ports or leave volumes", c)
		}
	}
}

// A second build waits for the first (a real flock), and gives up when
// its ctx ends.
func TestBuildLockSerialises(t *testing.T) {
	lockPath = filepath.Join(t.TempDir(), "lock")
	unlock, err := buildLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := buildLock(ctx); err == nil {
		t.Fatal("second lock taken while the first is held")
	}
	unlock()
	again, err := buildLock(context.Background())
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	again()
}
