package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/runfixture"
)

// TestFirstViolation: each run under a results folder, oldest first, with
// its first client op, first violation and the time between (the
// fixture's: op at 0.5 s, violation at 1.5 s); a valid run and a run
// never checked are named as such; the median is over the runs with a
// violation. Bad input exits 255 with the problem first.
func TestFirstViolation(t *testing.T) {
	base := t.TempDir()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a := runfixture.Write(t, base, runfixture.Spec{Name: "r", Start: t0, Invalid: true, Fencing: "off"})
	b := runfixture.Write(t, base, runfixture.Spec{Name: "r", Start: t0.Add(time.Minute)})
	c := runfixture.Write(t, base, runfixture.Spec{Name: "r", Start: t0.Add(2 * time.Minute), Unchecked: true})
	var out, errb bytes.Buffer
	if code := cmdFirstViolation([]string{base}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		a + ": first client op 0.50s, first violation 1.50s (double-writer): after 1.00s",
		b + ": first client op 0.50s, no violation",
		c + ": no results.json",
		"3 runs, 1 with a violation: median time to first violation 1.00s after the first client op (min 1.00s, max 1.00s)",
	}
	if len(lines) != len(want) {
		t.Fatalf("output:\n%s", out.String())
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d: %q, want %q", i, lines[i], want[i])
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give one or more folders"},
		{[]string{filepath.Join(base, "missing")}, "missing"},
		{[]string{t.TempDir()}, "no run folder"},
	} {
		out.Reset()
		errb.Reset()
		if code := cmdFirstViolation(tc.args, &out, &errb); code != exitHarness || !strings.Contains(strings.SplitN(errb.String(), "\n", 2)[0], tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 255 and %q first", tc.args, code, errb.String(), tc.want)
		}
	}
}
