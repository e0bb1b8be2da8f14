package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/runfixture"
)

// Bad input to chaos compare: the problem on the first line (with the
// way out: chaos check for a run never checked), exit 255, no page.
func TestCompareBadInput(t *testing.T) {
	base := t.TempDir()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	good := runfixture.Write(t, base, runfixture.Spec{Name: "good", Start: t0})
	unchecked := runfixture.Write(t, base, runfixture.Spec{Name: "killed", Start: t0, Unchecked: true})
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give two run folders"},
		{[]string{good}, "give two run folders"},
		{[]string{good, good, good}, "give two run folders"},
		{[]string{good, filepath.Join(base, "missing")}, "missing: no such folder"},
		{[]string{good, file}, "is not a folder"},
		{[]string{good, base}, "is not a run folder (no history.jsonl)"},
		{[]string{good, unchecked}, "has no results.json (the run was never checked); run `chaos check " + unchecked + "` first"},
		{[]string{good, filepath.Join(base, "good", "latest")}, "are the same run"},
		{[]string{"--bogus", good, unchecked}, "flag provided but not defined"},
	} {
		var out, errb bytes.Buffer
		code := cmdCompare(tc.args, &out, &errb)
		first, _, _ := strings.Cut(errb.String(), "\n")
		if code != exitHarness || !strings.Contains(first, tc.want) || out.Len() != 0 {
			t.Errorf("chaos compare %q: exit %d, first line %q, stdout %q; want 255 and %q", tc.args, code, first, out.String(), tc.want)
		}
	}
	pages, _ := filepath.Glob(filepath.Join(base, "compare-*"))
	if len(pages) != 0 {
		t.Errorf("pages written on bad input: %v", pages)
	}
}

// TestCompareWrites: flags after the runs, the page where --out says.
func TestCompareWrites(t *testing.T) {
	base := t.TempDir()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a := runfixture.Write(t, base, runfixture.Spec{Name: "a", Start: t0})
	b := runfixture.Write(t, base, runfixture.Spec{Name: "b", Start: t0, Invalid: true})
	out := filepath.Join(t.TempDir(), "page.html")
	var stdout, stderr bytes.Buffer
	if code := cmdCompare([]string{a, b, "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.String() != "compare: "+out+"\n" {
		t.Fatalf("stdout %q", stdout.String())
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
}

// Bad input to chaos serve: exit 255 before anything listens.
func TestServeBadInput(t *testing.T) {
	dir := t.TempDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--results", filepath.Join(dir, "missing"), "--addr", "127.0.0.1:0"}, "no such folder"},
		{[]string{"--results", dir, "--addr", "0.0.0.0:0"}, "not on loopback"},
		{[]string{"--results", dir, "--addr", ":0"}, "listens on every interface"},
		{[]string{"--results", dir, "--addr", "nonsense"}, "want host:port"},
		{[]string{"--results", dir, "--addr", busy.Addr().String()}, "already in use"},
		{[]string{"--results", dir, "extra"}, "unexpected arguments"},
	} {
		var out, errb bytes.Buffer
		code := cmdServe(context.Background(), tc.args, &out, &errb)
		first, _, _ := strings.Cut(errb.String(), "\n")
		if code != exitHarness || !strings.Contains(first, tc.want) || out.Len() != 0 {
			t.Errorf("chaos serve %q: exit %d, first line %q, stdout %q; want 255 and %q", tc.args, code, first, out.String(), tc.want)
		}
	}
}
