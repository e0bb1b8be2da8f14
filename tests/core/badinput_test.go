package core

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/internal/testkit/runfixture"
)

// TestBadInputStartsNothing runs the real binary with each bad input
// below: it must exit 255 with the problem on the first line of stderr
// (and no usage dump after it), and start nothing: no results folder, no
// process of a run, no network slot. Each case carries a short, faultless
// setting where it can, so that a binary that wrongly accepts it costs
// seconds rather than a minute.
func TestBadInputStartsNothing(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		first string // must appear on the first line of stderr
	}{
		{"empty gate", []string{"--gate", "", "--nemesis", "none", "--time-limit", "2s"}, "--gate is empty"},
		{"blank gate", []string{"--gate", " , ", "--nemesis", "none", "--time-limit", "2s"}, "--gate is empty"},
		{"empty nemesis", []string{"--nemesis", "", "--time-limit", "2s"}, "--nemesis is empty"},
		{"session timeout longer than the time limit", []string{"--session-timeout", "10m", "--time-limit", "20s"},
			"--time-limit 20s is shorter than one fault cycle: the minimum is 20m1s"},
		{"pause longer than the time limit", []string{"--pause", "30s", "--time-limit", "20s"},
			"--time-limit 20s is shorter than one fault cycle: the minimum is 31s"},
		{"time limit below one fault cycle", []string{"--time-limit", "1ns"}, "--time-limit 1ns is shorter than one fault cycle: the minimum is 3s"},
		{"time limit below the floor without faults", []string{"--time-limit", "1ns", "--nemesis", "none"}, "--time-limit 1ns: too short; the minimum is 1s"},
		{"time limit not a duration", []string{"--time-limit", "abc"}, `invalid value "abc" for flag -time-limit`},
		{"unknown flag", []string{"--no-such-flag", "--nemesis", "none", "--time-limit", "2s"}, "flag provided but not defined: -no-such-flag"},
		{"extra argument", []string{"extra", "--nemesis", "none", "--time-limit", "2s"}, "unexpected arguments: extra"},
		{"unknown backend", []string{"--cluster", "vm", "--nemesis", "none", "--time-limit", "2s"}, `--cluster: unknown backend "vm" (known: local, docker, external, ssh)`},
		{"ssh without hosts", []string{"--cluster", "ssh", "--nemesis", "none", "--time-limit", "2s"}, "--cluster ssh needs --hosts host1,host2,..."},
		{"hosts without ssh", []string{"--hosts", "h1,h2,h3", "--nemesis", "none", "--time-limit", "2s"}, "--hosts: only with --cluster ssh"},
		{"ssh flags without ssh", []string{"--ssh-user", "zk", "--install", "--nemesis", "none", "--time-limit", "2s"}, "--ssh-user, --install: only with --cluster ssh"},
		{"host twice", []string{"--cluster", "ssh", "--hosts", "h1,h1", "--nemesis", "none", "--time-limit", "2s"}, `--hosts: "h1" given twice`},
		{"missing ssh key", []string{"--cluster", "ssh", "--hosts", "h1", "--ssh-key", "/nonexistent/id", "--nemesis", "none", "--time-limit", "2s"}, "--ssh-key: stat /nonexistent/id"},
		{"image without docker", []string{"--image", "x:y", "--nemesis", "none", "--time-limit", "2s"}, "--image x:y: only with --cluster docker"},
		{"results folder that cannot be created", []string{"--results", "/proc/forbidden", "--nemesis", "none", "--time-limit", "2s"},
			"--results /proc/forbidden: cannot create a folder in /proc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			results := filepath.Join(t.TempDir(), "results")
			args := append([]string{"run", "--results", results, "--name", "bad"}, tc.args...)
			if slices.Contains(tc.args, "--results") {
				results = "/proc/forbidden"
			}
			code, stderr, pid := runBinary(t, args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if code != 255 {
				t.Errorf("exit %d, want 255", code)
			}
			if !strings.Contains(lines[0], tc.first) {
				t.Errorf("first line of stderr %q does not name the problem (%q)", lines[0], tc.first)
			}
			if len(lines) > 2 {
				t.Errorf("%d lines on stderr, want the error and at most a pointer to -h:\n%s", len(lines), chaostest.Tail(stderr, 2000))
			}
			if _, err := os.Lstat(results); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("results folder %s exists after bad input (%v)", results, err)
			}
			chaostest.AssertNothingStarted(t, pid)
		})
	}
}

// TestFlagMistakesPointAtHelp: every subcommand that parses flags, and the
// built-in worker, reports a mistake in one line, then points at -h; -h
// itself prints the whole usage and exits 0.
func TestFlagMistakesPointAtHelp(t *testing.T) {
	type command struct {
		name string   // as the messages name it
		argv []string // program and subcommand
	}
	var cmds []command
	for _, sub := range []string{"run", "check", "replay", "shrink", "test-all", "cleanup", "register", "janitor"} {
		cmds = append(cmds, command{"chaos " + sub, []string{chaostest.Binary(t), sub}})
	}
	cmds = append(cmds, command{"chaos-worker", []string{chaostest.Worker(t)}})
	for _, c := range cmds {
		code, stderr, _ := runProgramEnv(t, nil, c.argv[0], append(c.argv[1:], "--no-such-flag")...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		want := []string{c.name + ": flag provided but not defined: -no-such-flag",
			c.name + ": see '" + c.name + " -h' for the flags"}
		if code != 255 || len(lines) != 2 || lines[0] != want[0] || lines[1] != want[1] {
			t.Errorf("%s --no-such-flag: exit %d, stderr:\n%s\nwant exit 255 and:\n%s", c.name, code, chaostest.Tail(stderr, 1000), strings.Join(want, "\n"))
		}
		code, stderr, _ = runProgramEnv(t, nil, c.argv[0], append(c.argv[1:], "-h")...)
		if code != 0 || strings.Count(stderr, "\n") < 2 || !strings.Contains(stderr, "  -") {
			t.Errorf("%s -h: exit %d, want 0 and the flags:\n%s", c.name, code, chaostest.Tail(stderr, 1000))
		}
	}
}

// TestMissingPackageStartsNothing: a run (or bench) whose option needs a
// package this machine lacks is refused as bad input, before anything is
// made, naming the missing program and its Debian package on the first
// line. `make run` installs only what a default run uses
// (scripts/install-deps.sh run), so every other option's package may be
// missing; the default run's own (java, ip) too, where the script could
// not run. Each package is made missing by the environment: an empty
// PATH, or an override that points at an empty folder.
func TestMissingPackageStartsNothing(t *testing.T) {
	for _, tc := range missingCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needs != nil {
				if err := tc.needs(); err != nil {
					t.Skipf("not here: %v", err)
				}
			}
			results := filepath.Join(t.TempDir(), "results")
			args := append([]string{tc.args[0], "--results", results}, tc.args[1:]...)
			if tc.args[0] == "run" {
				// A run wrongly accepted costs seconds, not a minute.
				args = append(args, "--nemesis", "none", "--time-limit", "2s")
			}
			code, stderr, pid := runBinaryEnv(t, tc.env, args...)
			first, _, _ := strings.Cut(stderr, "\n")
			if code != 255 || !strings.Contains(first, tc.first) {
				t.Errorf("%s: exit %d, first line of stderr %q; want 255 and %q\n%s", tc.env, code, first, tc.first, chaostest.Tail(stderr, 2000))
			}
			if _, err := os.Lstat(results); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("results folder %s exists after a refused run (%v)", results, err)
			}
			chaostest.AssertNothingStarted(t, pid)
		})
	}
}

// missingCase is one option and the package it needs, made missing by env.
type missingCase struct {
	name  string
	env   []string
	args  []string // the subcommand, then its flags
	first string   // must appear on the first line of stderr
	needs func() error
}

// missingCases: each option whose package `make run` leaves out, and the
// default run's own programs.
func missingCases(t *testing.T) []missingCase {
	empty := t.TempDir()
	// java alone on PATH: the Curator worker is compiled (an empty cache)
	// and javac is missing.
	javaOnly := t.TempDir()
	if java, err := exec.LookPath("java"); err == nil {
		if err := os.Symlink(java, filepath.Join(javaOnly, "java")); err != nil {
			t.Fatal(err)
		}
	}
	needJava := func() error { _, err := exec.LookPath("java"); return err }
	// A ZooKeeper home whose lib has jars, none of them the server's.
	noServer := t.TempDir()
	if err := os.Mkdir(filepath.Join(noServer, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(noServer, "lib", "other.jar"), []byte("not a ZooKeeper jar"), 0o644); err != nil {
		t.Fatal(err)
	}
	needRoot := func() error {
		if os.Geteuid() != 0 {
			return errors.New("network namespaces need root")
		}
		return nil
	}
	return []missingCase{
		{"no java", []string{"PATH=" + empty}, []string{"run"},
			"the local backend's servers: no java on PATH (install a JRE 11 or later, Debian's openjdk-17-jre-headless", nil},
		{"no ZooKeeper server jar", []string{"ZOOKEEPER_HOME=" + noServer}, []string{"run"},
			"the local backend's servers: no jar of $ZOOKEEPER_HOME/lib (" + noServer + ") holds org.apache.zookeeper.server.quorum.QuorumPeerMain", nil},
		{"no ip for netns", []string{"PATH=" + empty}, []string{"run", "--net", "netns"},
			"--net netns: network namespaces need ip (install Debian's iproute2", needRoot},
		{"no redis-server", []string{"PATH=" + empty}, []string{"run", "--service", "redis"},
			"--service redis: redis-server not found (install Debian's redis-server", nil},
		{"no etcd", []string{"PATH=" + empty}, []string{"run", "--service", "etcd"},
			"--service etcd: etcd not found (install Debian's etcd-server", nil},
		{"no Curator jars", []string{"ZKCHAOS_JAVA_LIB=" + empty}, []string{"run", "--recipe", "curator"},
			"--recipe curator: subject curator: missing " + empty + "/curator-recipes.jar (install libcurator-recipes-java", nil},
		{"no javac", []string{"PATH=" + javaOnly, "XDG_CACHE_HOME=" + t.TempDir()}, []string{"run", "--recipe", "curator"},
			"no javac on PATH to compile the Curator worker (install a JDK, e.g. Debian's openjdk-17-jdk-headless", needJava},
		{"no kazoo", []string{"ZKCHAOS_PYTHON=" + empty + "/python3"}, []string{"run", "--recipe", "kazoo"},
			"--recipe kazoo: subject kazoo: no Python interpreter at " + empty + "/python3 (install python3-kazoo", nil},
		{"no PostgreSQL", []string{"ZKCHAOS_PG_BIN=" + empty}, []string{"run", "--resource", "postgres"},
			"--resource postgres: PostgreSQL server binary " + empty + "/initdb missing or not executable (install Debian's postgresql-15", netns.Available},
		{"bench without Curator jars", []string{"ZKCHAOS_JAVA_LIB=" + empty}, []string{"bench", "--quick"},
			"--subjects curator: subject curator: missing " + empty + "/curator-recipes.jar (install libcurator-recipes-java", nil},
	}
}

// runBinary runs the chaos binary (bounded: a binary that wrongly starts a
// run is killed, and its janitor cleans up) and returns its exit code,
// stderr and PID.
func runBinary(t *testing.T, args ...string) (int, string, int) {
	t.Helper()
	return runBinaryEnv(t, nil, args...)
}

// runBinaryEnv is runBinary with env added to (and overriding) ours.
func runBinaryEnv(t *testing.T, env []string, args ...string) (int, string, int) {
	t.Helper()
	return runProgramEnv(t, env, chaostest.Binary(t), args...)
}

// runProgramEnv runs program with args and env (bounded, as runBinary)
// and returns its exit code, stderr and PID.
func runProgramEnv(t *testing.T, env []string, program string, args ...string) (int, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	var se bytes.Buffer
	cmd.Stderr = &se
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s %v: %v", program, args, err)
	}
	return chaostest.ExitOf(err), se.String(), cmd.Process.Pid
}

// TestMissingWorkerStartsNothing: a chaos binary without chaos-worker
// beside it refuses a run of a built-in recipe before anything starts,
// exit 255, the first line naming the missing file and make build.
func TestMissingWorkerStartsNothing(t *testing.T) {
	alone := chaostest.BinaryAlone(t)
	results := filepath.Join(t.TempDir(), "results")
	code, stderr, pid := runProgramEnv(t, nil, alone, "run", "--results", results, "--nemesis", "none", "--time-limit", "2s")
	first, _, _ := strings.Cut(stderr, "\n")
	missing := filepath.Join(filepath.Dir(alone), "chaos-worker")
	if code != 255 || !strings.Contains(first, missing) || !strings.Contains(first, "make build") {
		t.Errorf("exit %d, first line %q; want 255 naming %s and make build\n%s", code, first, missing, chaostest.Tail(stderr, 2000))
	}
	if _, err := os.Lstat(results); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("results folder %s exists after bad input (%v)", results, err)
	}
	chaostest.AssertNothingStarted(t, pid)
}

// TestBadScheduleStartsNothing: chaos run --schedule with a schedule
// that does not read (a bad line, an unknown fault, offsets out of order)
// exits 255 naming the file and the line on the first line of stderr,
// and starts nothing.
func TestBadScheduleStartsNothing(t *testing.T) {
	good := `{"offset":"1s","fault":"pause-holder","hold":"2s"}`
	for _, tc := range []struct {
		name, line, first string
	}{
		{"bad line", `{"offset":"2s","fault":"pause-holder",`, "line 3: not a schedule entry"},
		{"unknown fault", `{"offset":"2s","fault":"pause-hodler","hold":"2s"}`, `line 3: unknown fault "pause-hodler"`},
		{"offsets out of order", `{"offset":"500ms","fault":"pause-holder","hold":"2s"}`, "line 3: offsets out of order: 500ms comes after 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sched := filepath.Join(dir, "schedule.json")
			if err := os.WriteFile(sched, []byte(good+"\n\n"+tc.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			results := filepath.Join(dir, "results")
			code, stderr, pid := runBinary(t, "run", "--schedule", sched, "--results", results, "--time-limit", "5s")
			first := strings.SplitN(stderr, "\n", 2)[0]
			if code != 255 || !strings.HasPrefix(first, "chaos run: schedule "+sched+" "+tc.first) {
				t.Errorf("exit %d, first line %q; want 255 and %q", code, first, tc.first)
			}
			if _, err := os.Lstat(results); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("results folder %s exists after bad input (%v)", results, err)
			}
			chaostest.AssertNothingStarted(t, pid)
		})
	}
}

// TestReplayRefusesWhatItCannotReplay: chaos replay (and chaos shrink)
// of no run is bad input (255); of a run never checked, exit 2 saying
// so; of a valid run, exit 0, nothing to reproduce (or shrink). None
// starts anything.
func TestReplayRefusesWhatItCannotReplay(t *testing.T) {
	base := t.TempDir()
	valid := runfixture.Write(t, base, runfixture.Spec{Name: "valid", Start: time.Now()})
	unchecked := runfixture.Write(t, base, runfixture.Spec{Name: "unchecked", Start: time.Now(), Invalid: true, Unchecked: true})
	for _, tc := range []struct {
		args  []string
		code  int
		first string
	}{
		{[]string{filepath.Join(base, "none")}, 255, "chaos replay: " + filepath.Join(base, "none") + " is not a run folder"},
		{[]string{"--repeat", "0", valid}, 255, "chaos replay: --repeat 0: must be at least 1"},
		{[]string{"--rate", "3/2", valid}, 255, "chaos replay: --rate: rate \"3/2\": want NEED/OF"},
		{[]string{"--rate", "2/6", "--repeat", "6", valid}, 255, "chaos replay: --rate and --repeat both given"},
		{[]string{unchecked}, 2, "chaos replay: cannot replay " + unchecked + ": it was never checked"},
		{[]string{valid}, 0, ""},
		{[]string{"shrink", filepath.Join(base, "none")}, 255, "chaos shrink: " + filepath.Join(base, "none") + " is not a run folder"},
		{[]string{"shrink", unchecked}, 2, "chaos shrink: cannot replay " + unchecked + ": it was never checked"},
		{[]string{"shrink", valid}, 0, ""},
	} {
		args := append([]string{"replay"}, tc.args...)
		if tc.args[0] == "shrink" {
			args = tc.args
		}
		code, stderr, pid := runBinary(t, args...)
		if first := strings.SplitN(stderr, "\n", 2)[0]; code != tc.code || !strings.HasPrefix(first, tc.first) {
			t.Errorf("chaos %v: exit %d, first line %q; want %d and %q", args, code, first, tc.code, tc.first)
		}
		chaostest.AssertNothingStarted(t, pid)
	}
	for _, dir := range []string{valid, unchecked} {
		for _, made := range []string{"replay", "shrink"} {
			if _, err := os.Lstat(filepath.Join(dir, made)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: a %s folder was made (%v)", dir, made, err)
			}
		}
	}
}
