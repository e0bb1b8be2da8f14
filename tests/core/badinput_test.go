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

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
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
	for _, sub := range []string{"run", "check", "test-all", "cleanup", "register", "janitor"} {
		cmds = append(cmds, command{"chaos " + sub, []string{chaostest.Binary(t), sub}})
	}
	cmds = append(cmds, command{"chaos-worker", []string{chaostest.Worker(t)}})
	for _, c := range cmds {
		code, stderr, _ := runProgram(t, append(c.argv, "--no-such-flag")...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		want := []string{c.name + ": flag provided but not defined: -no-such-flag",
			c.name + ": see '" + c.name + " -h' for the flags"}
		if code != 255 || len(lines) != 2 || lines[0] != want[0] || lines[1] != want[1] {
			t.Errorf("%s --no-such-flag: exit %d, stderr:\n%s\nwant exit 255 and:\n%s", c.name, code, chaostest.Tail(stderr, 1000), strings.Join(want, "\n"))
		}
		code, stderr, _ = runProgram(t, append(c.argv, "-h")...)
		if code != 0 || strings.Count(stderr, "\n") < 2 || !strings.Contains(stderr, "  -") {
			t.Errorf("%s -h: exit %d, want 0 and the flags:\n%s", c.name, code, chaostest.Tail(stderr, 1000))
		}
	}
}

// TestMissingWorkerStartsNothing: a chaos binary without chaos-worker
// beside it refuses a run of a built-in recipe before anything starts,
// exit 255, the first line naming the missing file and make build.
func TestMissingWorkerStartsNothing(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "chaos")
	b, err := os.ReadFile(chaostest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(t.TempDir(), "results")
	code, stderr, pid := runProgram(t, alone, "run", "--results", results, "--nemesis", "none", "--time-limit", "2s")
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

// runBinary runs the chaos binary with args (runProgram).
func runBinary(t *testing.T, args ...string) (int, string, int) {
	t.Helper()
	return runProgram(t, append([]string{chaostest.Binary(t)}, args...)...)
}

// runProgram runs argv (bounded: a binary that wrongly starts a run is
// killed, and its janitor cleans up) and returns its exit code, stderr
// and PID.
func runProgram(t *testing.T, argv ...string) (int, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = t.TempDir()
	var se bytes.Buffer
	cmd.Stderr = &se
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%v: %v", argv, err)
	}
	return chaostest.ExitOf(err), se.String(), cmd.Process.Pid
}
