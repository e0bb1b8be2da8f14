package report

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/suite"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/synth"
	"github.com/zkchaos/zkchaos/resource/register"
)

// bench100k is the synthetic 100 000-operation run (internal/testkit/synth:
// the defaults of chaos run, about 28 min of run clock, 166
// pause-holder faults, fencing off) in a folder, with the checkers'
// results, made once for every benchmark of the package.
var bench100k struct {
	once sync.Once
	dir  string
	run  synth.Run
	res  checker.Results
	err  error
}

// run100k is bench100k, made on first use; TestMain removes its folder.
func run100k(tb testing.TB) (string, synth.Run, checker.Results) {
	tb.Helper()
	b := &bench100k
	b.once.Do(func() {
		if b.run, b.err = synth.Generate(synth.Spec{Ops: 100_000, Seed: 1}); b.err != nil {
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "zkchaos-bench-100k-"); b.err != nil {
			return
		}
		if b.err = b.run.WriteDir(b.dir); b.err != nil {
			return
		}
		b.res = suite.RunAll(context.Background(), checker.Input{History: b.run.Events, ApplyLog: b.run.ApplyLog,
			StartWall: b.run.StartWall, Fencing: b.run.Spec.Fencing, SessionTimeout: b.run.Spec.SessionTimeout, Dir: b.dir}, nil)
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.dir, b.run, b.res
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench100k.dir != "" {
		os.RemoveAll(bench100k.dir)
	}
	os.Exit(code)
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
	dir, _, _ := run100k(b)
	for b.Loop() {
		readRun(b, dir)
	}
}

// BenchmarkReport100k is report.Write of the 100k run from the data
// already read and judged (as runner.Check calls it): figures, tables,
// template and the file. The report must not take longer than reading.
func BenchmarkReport100k(b *testing.B) {
	dir, r, res := run100k(b)
	h, log := readRun(b, dir)
	page := benchPage(dir, r, res, h, log)
	out := filepath.Join(dir, store.ReportFile)
	for b.Loop() {
		if err := Write(out, page); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReportOverRead100k reads the 100k run and writes its report
// in turn, and reports report/read: the ratio of their wall times and of
// the process's CPU times (which other processes on a shared machine do
// not inflate). The bound is a ratio at most 1.
func BenchmarkReportOverRead100k(b *testing.B) {
	dir, r, res := run100k(b)
	out := filepath.Join(dir, store.ReportFile)
	var readWall, readCPU, repWall, repCPU time.Duration
	for b.Loop() {
		w0, c0 := time.Now(), cpuTime(b)
		h, log := readRun(b, dir)
		w1, c1 := time.Now(), cpuTime(b)
		if err := Write(out, benchPage(dir, r, res, h, log)); err != nil {
			b.Fatal(err)
		}
		w2, c2 := time.Now(), cpuTime(b)
		readWall, readCPU = readWall+w1.Sub(w0), readCPU+c1-c0
		repWall, repCPU = repWall+w2.Sub(w1), repCPU+c2-c1
	}
	b.ReportMetric(float64(readCPU.Milliseconds())/float64(b.N), "ms-read-cpu")
	b.ReportMetric(float64(repCPU.Milliseconds())/float64(b.N), "ms-report-cpu")
	b.ReportMetric(float64(repWall)/float64(readWall), "report/read-wall")
	b.ReportMetric(float64(repCPU)/float64(readCPU), "report/read-cpu")
}

// benchPage is the page runner.Check writes for the run.
func benchPage(dir string, r synth.Run, res checker.Results, h history.ReadResult, log []register.Entry) Page {
	var nem []history.Event
	for _, e := range h.Events {
		if e.Process == history.Nemesis {
			nem = append(nem, e)
		}
	}
	return Page{Name: "synthetic", Dir: dir, Results: res, Nemesis: nem, History: h.Events, ApplyLog: log, StartWall: r.StartWall}
}

// cpuTime is the process's user and system time so far.
func cpuTime(tb testing.TB) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
