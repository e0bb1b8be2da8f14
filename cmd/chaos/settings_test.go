package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/backend"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/observe/metrics"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/report"
	"github.com/zkchaos/zkchaos/run/runner"
	"github.com/zkchaos/zkchaos/workloads"
)

// TestSettingFlags: every setting a package below may name is named by a
// flag one of its table's commands has, so a refusal points at something
// the user can type; a name that stands for a field is one of its
// config's; and a name two tables give is the same flag in both.
func TestSettingFlags(t *testing.T) {
	root := newRoot(t.Context(), streams{out: io.Discard, err: io.Discard})
	command := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		command[c.Name()] = c
	}
	seen := map[string]string{}
	for _, tb := range settingTables {
		for name, flag := range tb.flags {
			if tb.config != nil {
				if _, ok := reflect.TypeOf(tb.config).FieldByName(name); !ok {
					t.Errorf("%s: no such field of %T", name, tb.config)
				}
			}
			if !anyHasFlag(t, command, tb.commands, strings.TrimPrefix(flag, "--")) {
				t.Errorf("%s: flag %s is not among %v's", name, flag, tb.commands)
			}
			if other, ok := seen[name]; ok && other != flag {
				t.Errorf("%s is %s in one table and %s in another", name, other, flag)
			}
			seen[name] = flag
			if got := setting.Name(name); got != flag {
				t.Errorf("setting.Name(%q) = %q, want %q", name, got, flag)
			}
		}
	}
	if err := (runner.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "--workers 0: must be 1..200") {
		t.Errorf("a refusal does not name the flag: %v", err)
	}
}

// anyHasFlag says whether one of the named commands has the flag.
func anyHasFlag(t *testing.T, command map[string]*cobra.Command, names []string, flag string) bool {
	t.Helper()
	for _, n := range names {
		c, ok := command[n]
		if !ok {
			t.Fatalf("no command %s", n)
		}
		if c.Flags().Lookup(flag) != nil {
			return true
		}
	}
	return false
}

// TestTextsMadeLaterNameFlags: texts of the packages below that name a
// setting and outlive a call (the soak's figures, the report page, a
// backend's reasons, a gate cell's why) say the flag through this
// command: none of them was made at package init, before the names were
// registered, when it would have said words.
func TestTextsMadeLaterNameFlags(t *testing.T) {
	ln, err := metrics.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := metrics.Serve(ln, metrics.Sources{Status: func() (progress.Status, bool) { return progress.Status{Limit: time.Hour}, true }})
	defer s.Close()
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	figures, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	res := checker.Results{Valid: checker.Invalid, Completion: &checker.Completion{StoppedAtFirst: true, Phase: "done", FinalPhase: true}}
	if err := report.Write(page, report.Page{Name: "x", Results: res}); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	election, err := workloads.Lookup(workloads.ElectionName)
	if err != nil {
		t.Fatal(err)
	}
	var whys []string
	for _, c := range election.GateCells() {
		whys = append(whys, c.Why)
	}
	for _, tc := range []struct{ where, text, want string }{
		{"the soak's figures", string(figures), "The workload's time limit (--duration)."},
		{"the report page", string(html), "asked to stop there (--stop-at-first)"},
		{"the external backend's reasons", backend.Capabilities(backend.External, true).Lacks[cluster.CanKill], "(--cluster external)"},
		{"the election's gate cells", strings.Join(whys, "\n"), "(--first-fault 0s;"},
	} {
		if !strings.Contains(tc.text, tc.want) {
			t.Errorf("%s do not say %q:\n%s", tc.where, tc.want, tc.text)
		}
	}
}
