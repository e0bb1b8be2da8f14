package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
)

func TestGateCells(t *testing.T) {
	cells := Gate("exec:/bin/client")
	fenced := map[string]bool{}
	for _, c := range cells {
		if c.Recipe != "exec:/bin/client" || !strings.HasPrefix(c.Name(), "subject/") {
			t.Errorf("cell %s runs %q", c.Name(), c.Recipe)
		}
		if _, judged := c.Expect[lock.NameHerd]; judged {
			t.Errorf("cell %s judges herd: a worker need not report wake-ups", c.Name())
		}
		if c.Fencing == "on" {
			fenced[c.Nemesis[0]] = true
			for _, n := range []string{lock.NameGrantOverlap, lock.NameTokenOrder, lock.NameLiveness, fence.NameDoubleWriter} {
				if c.Expect[n] != checker.Valid {
					t.Errorf("fenced cell %s does not gate on %s", c.Name(), n)
				}
			}
		} else if c.Expect[fence.NameDoubleWriter] != checker.Invalid {
			t.Errorf("unfenced cell %s must expect double-writer invalid", c.Name())
		}
	}
	for _, f := range append([]string{"none"}, faults...) {
		if !fenced[f] {
			t.Errorf("no fenced gate cell under %s", f)
		}
	}
	var quick []string
	for _, c := range GateQuick("exec:/bin/client") {
		quick = append(quick, c.Name())
	}
	want := "subject/none/fencing-on subject/pause-holder/fencing-off"
	if strings.Join(quick, " ") != want {
		t.Errorf("quick set %v, want %s", quick, want)
	}
}

// TestGateOf: the standard cells are the workload's own, each named by
// its workload (the lock's by none) and run with --workload, the gate's
// length and then the cell's own flags, under a unique name; an unknown
// workload is refused naming the known.
func TestGateOf(t *testing.T) {
	cells, err := GateOf("", "exec:/bin/client")
	if err != nil || len(cells) != len(Gate("exec:/bin/client")) || len(cells) < 3 {
		t.Fatalf("GateOf(lock): %d cells, %v", len(cells), err)
	}
	if lock, err := GateOf("lock", "exec:/bin/client"); err != nil || lock[0].Name() != cells[0].Name() || lock[0].Workload != "" {
		t.Errorf("GateOf(\"lock\") is not the default's cells: %v", err)
	}
	for _, wl := range []string{"election", "config"} {
		cells, err := GateOf(wl, "exec:/bin/client")
		if err != nil || len(cells) < 2 {
			t.Fatalf("GateOf(%s): %d cells, %v", wl, len(cells), err)
		}
		seen := map[string]bool{}
		for _, c := range cells {
			args := strings.Join(c.RunArgs(1), " ")
			if !strings.HasPrefix(c.Name(), wl+":subject/") || !strings.Contains(args, "--workload "+wl) ||
				!strings.Contains(args, strings.Join(long, " ")) {
				t.Errorf("cell %s runs %s", c.Name(), args)
			}
			if seen[c.Name()] {
				t.Errorf("two cells named %s", c.Name())
			}
			seen[c.Name()] = true
		}
		quick := Smoke(cells)
		if len(quick) != 2 || quick[0].Name() != wl+":subject/none/fencing-on" {
			t.Errorf("GateOf(%s) quick set: %v", wl, quick)
		}
	}
	el, _ := GateOf("election", "exec:/bin/client")
	var short string
	for _, c := range el {
		if c.Variant == "pause-1s" && c.Nemesis[0] == "pause-app-leader" {
			short = strings.Join(c.Args, " ")
		}
	}
	if want := strings.Join(long, " ") + " --pause 1s"; short != want {
		t.Errorf("election:subject/pause-app-leader/fencing-on/pause-1s args %q, want %q", short, want)
	}
	if _, err := GateOf("elect", "exec:/bin/client"); err == nil || !strings.Contains(err.Error(), "known: config, election, lock") {
		t.Errorf("GateOf(elect): %v", err)
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFileGood(t *testing.T) {
	js := `[
  {"nemesis": ["pause-holder"], "fencing": "off", "expect": {"double-writer": "invalid"}, "why": "sees writes"},
  {"recipe": "seed", "args": ["--keys", "1"], "expect": {"grant-overlap": "valid", "herd": "valid"}}
]`
	yml := `- nemesis: [pause-holder]
  fencing: off
  expect: {double-writer: invalid}
  why: sees writes
- recipe: seed
  args: ["--keys", "1"]
  expect:
    grant-overlap: valid
    herd: valid
`
	for name, body := range map[string]string{"m.json": js, "m.yaml": yml} {
		cells, err := LoadFile(writeFile(t, name, body), "exec:/bin/client", nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(cells) != 2 {
			t.Fatalf("%s: %d cells", name, len(cells))
		}
		a, b := cells[0], cells[1]
		if a.Name() != "subject/pause-holder/fencing-off" || a.Expect[fence.NameDoubleWriter] != checker.Invalid || a.Why != "sees writes" {
			t.Errorf("%s: first cell %s %v %q", name, a.Name(), a.Expect, a.Why)
		}
		if b.Name() != "seed/none/fencing-on" || b.Expect[lock.NameHerd] != checker.Valid || strings.Join(b.Args, " ") != "--keys 1" {
			t.Errorf("%s: second cell %s %v %v (defaults: nemesis none, fencing on)", name, b.Name(), b.Expect, b.Args)
		}
	}
}

// TestLoadFileWorkload: a cell of another workload names that workload's
// checkers, and runs it.
func TestLoadFileWorkload(t *testing.T) {
	p := writeFile(t, "e.yaml", "- workload: election\n  nemesis: [pause-app-leader]\n  expect: {exactly-once: valid, herd: valid}\n")
	cells, err := LoadFile(p, "exec:/bin/client", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cells[0]
	if c.Workload != "election" || c.Name() != "election:subject/pause-app-leader/fencing-on" ||
		!strings.Contains(strings.Join(c.RunArgs(1), " "), "--workload election") {
		t.Errorf("cell %s, workload %q, args %v", c.Name(), c.Workload, c.RunArgs(1))
	}
}

func TestLoadFileBad(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"syntax.json", "[\n  {\"expect\": {\"herd\": \"valid\"}},\n  {\"expect\": }\n]", ":3:"},
		{"unknown.json", "[\n  {\"expect\": {\"herd\": \"valid\"},\n   \"expects\": {}}\n]", `:3:4: json: unknown field "expects"`},
		{"type.json", "[\n  {\"fencing\": 1, \"expect\": {\"herd\": \"valid\"}}\n]", ":2:"},
		{"notarray.json", `{"cells": []}`, ":1:2: the file must be a JSON array"},
		{"empty.json", `[]`, "no cells"},
		{"fencing.json", "[\n\n  {\"fencing\": \"maybe\", \"expect\": {\"herd\": \"valid\"}}]", `:3:3: fencing "maybe"`},
		{"verdict.json", "[{\"expect\": {\"herd\": \"ok\"}}]", `:1:2: expect herd: "ok"`},
		{"checker.json", "[{\"expect\": {\"hurd\": \"valid\"}}]", `unknown checker "hurd" of the lock workload (known: integrity, double-writer,`},
		{"election.json", "[{\"workload\": \"election\", \"expect\": {\"double-writer\": \"valid\"}}]",
			`:1:2: expect: unknown checker "double-writer" of the election workload (known: integrity, `},
		{"workload.yaml", "- workload: elect\n  expect: {herd: valid}\n", `1:3: workload: unknown workload "elect" (known: config, election, lock)`},
		{"args.yaml", "- args: [--workload, config]\n  expect: {herd: valid}\n", `1:3: args: give the workload as the cell's "workload"`},
		{"args1.yaml", "- args: [-workload=config]\n  expect: {herd: valid}\n", `1:3: args: give the workload as the cell's "workload"`},
		{"noexpect.json", "[{\"why\": \"x\"}]", "no \"expect\""},
		{"dup.json", "[{\"expect\": {\"herd\": \"valid\"}},\n{\"expect\": {\"herd\": \"invalid\"}}]", `:2:1: cell subject/none/fencing-on is also at line 1`},
		{"unknown.yaml", "- expect: {herd: valid}\n- expect: {herd: valid}\n  variant: b\n  fencng: on\n", "4:1: field fencng not found"},
		{"verdict.yml", "- expect: {herd: valid}\n- expect: {herd: nope}\n  variant: b\n", `2:3: expect herd: "nope"`},
		{"notlist.yaml", "cells: []\n", "must be a YAML list"},
		{"syntax.yaml", "- expect: {herd: valid\n", "yaml:"},
	}
	for _, tc := range cases {
		p := writeFile(t, tc.name, tc.body)
		_, err := LoadFile(p, "exec:/bin/client", nil)
		if err == nil || !strings.HasPrefix(err.Error(), p+":") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to start with the file and hold %q", tc.name, err, tc.want)
		}
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.json"), "x", nil); err == nil {
		t.Error("a missing file must be an error")
	}
}
