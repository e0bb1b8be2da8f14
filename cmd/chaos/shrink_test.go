package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/runfixture"
)

// shrinkFixture writes a checked lock run (invalid or valid) with a
// schedule of one entry under base, and returns its folder.
func shrinkFixture(t *testing.T, base, name string, invalid bool) string {
	t.Helper()
	dir := runfixture.Write(t, base, runfixture.Spec{Name: name, Start: time.Now(), Invalid: invalid})
	writeSchedule(t, filepath.Join(dir, store.ScheduleFile), `{"offset":"1s","fault":"pause-holder","hold":"2s","outcome":"ok"}`)
	return dir
}

// editJSON rewrites one top-level field of the JSON file path.
func editJSON(t *testing.T, path, field string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m[field] = v
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestShrinkRefuses: what chaos shrink does not take is refused before
// anything starts, the reason on the first line: a valid original has
// nothing to shrink (0), an unknown one cannot be (2), and an external
// ensemble, a violation no gating checker found, a shrink folder already
// there, a folder that is no run and bad flags are bad input (255).
func TestShrinkRefuses(t *testing.T) {
	base := t.TempDir()
	external := shrinkFixture(t, base, "external", true)
	editJSON(t, filepath.Join(external, store.TestFile), "cluster", "external")
	unknown := shrinkFixture(t, base, "unknown", true)
	editJSON(t, filepath.Join(unknown, store.ResultsFile), "valid", checker.Unknown)
	ungated := shrinkFixture(t, base, "ungated", true)
	editJSON(t, filepath.Join(ungated, store.ResultsFile), "checkers", map[string]any{})
	shrunk := shrinkFixture(t, base, "shrunk", true)
	if err := os.Mkdir(filepath.Join(shrunk, "shrink"), 0o755); err != nil {
		t.Fatal(err)
	}
	valid := shrinkFixture(t, base, "valid", false)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{valid}, exitValid, "nothing to shrink: " + valid + " is valid"},
		{[]string{external}, exitHarness, "it ran on an external ensemble (--cluster external)"},
		{[]string{unknown}, exitUnknown, "its verdict is unknown, not a violation"},
		{[]string{ungated}, exitHarness, "its violation is not a gating one"},
		{[]string{shrunk}, exitHarness, "from an earlier shrink"},
		{[]string{base}, exitHarness, "no history.jsonl"},
		{[]string{"--rate", "3/2", external}, exitHarness, "--rate: rate \"3/2\""},
		{[]string{"--budget", "0s", external}, exitHarness, "--budget 0s: must be positive"},
		{nil, exitHarness, "no run folder given"},
	} {
		var out, errb bytes.Buffer
		code := execute(context.Background(), context.Background(), append([]string{"shrink", "--progress", "off"}, tc.args...), streams{out: &out, err: &errb})
		first, _, _ := strings.Cut(errb.String()+out.String(), "\n")
		if code != tc.code || !strings.Contains(first, tc.want) {
			t.Errorf("chaos shrink %q: exit %d, first line %q; want %d and %q", tc.args, code, first, tc.code, tc.want)
		}
	}
	for _, d := range []string{valid, external, unknown, ungated} {
		if _, err := os.Lstat(filepath.Join(d, "shrink")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a shrink folder was made (%v)", d, err)
		}
	}
}
