package report

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/suite"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/synth"
	"github.com/zkchaos/zkchaos/register"
	"github.com/zkchaos/zkchaos/store"
)

// run100k writes the synthetic 100 000-operation run (internal/synth:
// the defaults of chaos run, about 28 min of run clock, 166
// pause-holder faults, fencing off) into a fresh folder.
func run100k(tb testing.TB) (string, synth.Run) {
	tb.Helper()
	r, err := synth.Generate(synth.Spec{Ops: 100_000, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	if err := r.WriteDir(dir); err != nil {
		tb.Fatal(err)
	}
	return dir, r
}

// readRun is what runner.Check reads before the checkers: the history
// and the apply log.
func readRun(tb testing.TB, dir string) (history.ReadResult, []register.Entry) {
	h, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil {
		tb.Fatal(err)
	}
	log, err := register.ReadApplyLog(filepath.Join(dir, store.ApplyLogFile))
	if err != nil {
		tb.Fatal(err)
	}
	return h, log
}

// BenchmarkReadHistory100k is the yardstick of BenchmarkReport100k:
// reading the run's history and apply log, which every check does.
func BenchmarkReadHistory100k(b *testing.B) {
	dir, _ := run100k(b)
	for b.Loop() {
		readRun(b, dir)
	}
}

// BenchmarkReport100k is report.Write of the 100k run from the data
// already read and judged (as runner.Check calls it): figures, tables,
// template and the file. The report must not take longer than reading.
func BenchmarkReport100k(b *testing.B) {
	dir, r := run100k(b)
	h, log := readRun(b, dir)
	res := suite.RunAll(context.Background(), checker.Input{History: h.Events, ApplyLog: log, StartWall: r.StartWall,
		Fencing: r.Spec.Fencing, SessionTimeout: r.Spec.SessionTimeout, Dir: dir}, nil)
	var nem []history.Event
	for _, e := range h.Events {
		if e.Process == history.Nemesis {
			nem = append(nem, e)
		}
	}
	page := Page{Name: "synthetic", Dir: dir, Results: res, Nemesis: nem, History: h.Events, ApplyLog: log, StartWall: r.StartWall}
	out := filepath.Join(dir, store.ReportFile)
	for b.Loop() {
		if err := Write(out, page); err != nil {
			b.Fatal(err)
		}
	}
}
