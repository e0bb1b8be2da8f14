package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// chaos runs the command tree with args and returns its exit code,
// stdout and stderr.
func chaos(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(context.Background(), context.Background(), args, streams{in: strings.NewReader(""), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

// TestManPages: chaos man writes a page per command shown in the help;
// chaos run's names its real flags, and the internal processes have none.
func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	if code, _, stderr := chaos(t, "man", dir); code != 0 {
		t.Fatalf("chaos man: exit %d: %s", code, stderr)
	}
	page, err := os.ReadFile(filepath.Join(dir, "chaos-run.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{`\fB--time-limit\fP`, `\fB--nemesis\fP`, `\fB--stop-at-first\fP`} {
		if !bytes.Contains(page, []byte(flag)) {
			t.Errorf("chaos-run.1 does not name %s", flag)
		}
	}
	for _, hidden := range []string{"register", "janitor"} {
		if _, err := os.Stat(filepath.Join(dir, "chaos-"+hidden+".1")); err == nil {
			t.Errorf("a man page for the internal chaos %s", hidden)
		}
	}
	if code, _, stderr := chaos(t, "man"); code != exitHarness || !strings.HasPrefix(stderr, "chaos man: give one folder") {
		t.Errorf("chaos man without a folder: exit %d, stderr %q", code, stderr)
	}
}

// TestHelpGroups: the help lists the commands under their groups on
// stdout and leaves out the processes only the harness starts, which
// still answer.
func TestHelpGroups(t *testing.T) {
	code, stdout, _ := chaos(t, "--help")
	if code != 0 {
		t.Fatalf("chaos --help: exit %d", code)
	}
	for _, want := range []string{"Run and check:\n  run ", "Gate and matrix:\n  test-all ", "Inspect:\n  compare ", "Maintenance:\n  bench "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, stdout)
		}
	}
	for _, hidden := range []string{"register", "janitor"} {
		if strings.Contains(stdout, "\n  "+hidden+" ") {
			t.Errorf("help lists the internal %s:\n%s", hidden, stdout)
		}
		if code, _, stderr := chaos(t, hidden, "-h"); code != 0 || !strings.Contains(stderr, "--") {
			t.Errorf("chaos %s -h: exit %d, stderr %q", hidden, code, stderr)
		}
	}
	if code, _, stderr := chaos(t); code != exitHarness || !strings.Contains(stderr, "Usage:") {
		t.Errorf("chaos without a command: exit %d, stderr %q; want 255 and the usage", code, stderr)
	}
	// The worker is chaos-worker, a binary of its own; one way to start it.
	if code, _, stderr := chaos(t, "worker", "--zk", "127.0.0.1:1"); code != exitHarness || !strings.HasPrefix(stderr, `chaos: unknown command "worker"`) {
		t.Errorf("chaos worker: exit %d, stderr %q; want the unknown command", code, stderr)
	}
	if code, _, stderr := chaos(t, "nope"); code != exitHarness || !strings.HasPrefix(stderr, `chaos: unknown command "nope"`) {
		t.Errorf("chaos nope: exit %d, stderr %q", code, stderr)
	}
}

// TestCompletion: the shells' completion scripts, and flag completion.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "# bash completion", "zsh": "#compdef chaos"} {
		if code, stdout, stderr := chaos(t, "completion", shell); code != 0 || !strings.HasPrefix(stdout, want) {
			t.Errorf("chaos completion %s: exit %d, stdout %.40q, stderr %q", shell, code, stdout, stderr)
		}
	}
	if _, stdout, _ := chaos(t, "__complete", "run", "--time-"); !strings.Contains(stdout, "--time-limit") {
		t.Errorf("completing chaos run --time-: %q", stdout)
	}
}

// TestOneDashLongFlags: a long flag with one dash, as Go's flag package
// took it, is read as the long flag; a value that looks like a flag and
// what follows -- are left alone.
func TestOneDashLongFlags(t *testing.T) {
	root := newRoot(context.Background(), streams{out: io.Discard, err: io.Discard})
	for _, tc := range []struct{ in, want []string }{
		{[]string{"run", "-seed", "7", "-time-limit=5s", "-stop-at-first"}, []string{"run", "--seed", "7", "--time-limit=5s", "--stop-at-first"}},
		{[]string{"run", "--name", "-seed", "-h"}, []string{"run", "--name", "-seed", "-h"}},
		{[]string{"run", "-stop-at-first", "-seed", "-1"}, []string{"run", "--stop-at-first", "--seed", "-1"}},
		{[]string{"image", "build", "-force"}, []string{"image", "build", "--force"}},
		{[]string{"run", "-no-such-flag", "--", "-seed"}, []string{"run", "-no-such-flag", "--", "-seed"}},
	} {
		if got := longFlags(root, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
	cfg, err := parseRunFlags([]string{"-seed", "7", "-time-limit", "5s", "-results", t.TempDir()}, io.Discard)
	if err != nil || cfg.Seed != 7 || cfg.TimeLimit != 5*time.Second {
		t.Errorf("one-dash run flags: seed %d, time limit %s, err %v", cfg.Seed, cfg.TimeLimit, err)
	}
}
