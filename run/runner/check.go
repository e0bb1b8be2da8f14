package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/linear"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/report"
	"github.com/zkchaos/zkchaos/report/runview"
	"github.com/zkchaos/zkchaos/resource/pgfence"
	"github.com/zkchaos/zkchaos/workloads"
)

// CheckOutcome is the checkers' judgement of a stored run.
type CheckOutcome struct {
	Results checker.Results
	Report  string
	// Truncated says the history's last line was cut (the run was killed
	// mid-write) and dropped.
	Truncated bool
}

// DefaultCheckBudget bounds each checker's time when nobody says otherwise:
// enough for porcupine on a long CI run, short enough that a blow-up ends
// as unknown rather than as a hung job.
const DefaultCheckBudget = 60 * time.Second

// CheckOption adjusts one Check.
type CheckOption func(*checkOpts)

type checkOpts struct{ budget time.Duration }

// WithBudget bounds each checker's time (0: no bound but ctx); a checker
// over budget is unknown.
func WithBudget(d time.Duration) CheckOption { return func(o *checkOpts) { o.budget = d } }

// Check reads a run folder exactly as chaos run left it (or as a killed run
// left it), runs the checkers, and writes results.json and report.html.
// startWall is the run's start (Unix ns); 0 reads it from test.json. The
// same code judges a live run and `chaos check`, so the two cannot differ.
func Check(ctx context.Context, dir string, gate []string, startWall int64, opts ...CheckOption) (*CheckOutcome, error) {
	o := checkOpts{budget: DefaultCheckBudget}
	for _, opt := range opts {
		opt(&o)
	}
	// Not store.Open: a run killed in its setup has a status but no
	// history yet, and is judged all the same (never valid).
	run := &store.Run{Dir: dir}
	reexport(ctx, run)
	ev, err := runview.ReadEvidence(os.DirFS(run.Dir))
	if errors.Is(err, runview.ErrNotRun) {
		return nil, fmt.Errorf("%s is not a run folder: no %s and no %s", dir, store.HistoryFile, store.StatusFile)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", run.Dir, err)
	}
	rawTest, h, applyLog := ev.Test, ev.History, ev.ApplyLog
	var tf testFile
	if len(rawTest) > 0 {
		if err := json.Unmarshal(rawTest, &tf); err != nil {
			return nil, fmt.Errorf("%s: %w", run.Path(store.TestFile), err)
		}
	}
	if startWall == 0 {
		startWall = tf.StartWall
	}
	if tf.Workload == "" {
		tf.Workload = workloads.LockName // a run from before --workload
	}
	wl, err := tf.NewWorkload()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", run.Path(store.TestFile), err)
	}
	if len(gate) == 0 {
		gate = tf.Gate
	}
	if len(gate) == 0 {
		gate = wl.DefaultGate()
	}
	if err := workloads.ValidateGate(wl, gate); err != nil {
		return nil, err
	}
	st := ev.Status
	var end int64
	for _, e := range h.Events {
		end = max(end, e.Time)
	}
	if st.TimeLimitNS == 0 {
		st.TimeLimitNS = int64(tf.TimeLimit)
	}
	completion := checker.CompletionOf(st, ev.HasStatus, end)
	// Pages of an earlier check of this folder would be stale (or, for a
	// key that now passes, wrong); the checkers draw them afresh.
	if err := os.RemoveAll(run.Path(linear.VisualDir)); err != nil {
		return nil, fmt.Errorf("remove old visualisations: %w", err)
	}
	res := checker.Run(ctx, checker.Input{History: h.Events, ApplyLog: applyLog, StartWall: startWall,
		Fencing: tf.Fencing, SessionTimeout: tf.SessionTimeout, Dir: run.Dir, Budget: o.budget, Completion: &completion}, gate, wl.Checkers())
	if err := checker.WriteResults(run.Path(store.ResultsFile), res); err != nil {
		return nil, err
	}
	out := &CheckOutcome{Results: res, Report: run.Path(store.ReportFile), Truncated: h.Truncated}
	var nem []history.Event
	for _, e := range h.Events {
		if e.Process == history.Nemesis {
			nem = append(nem, e)
		}
	}
	page := report.Page{Name: tf.Name, Dir: run.Dir, Start: tf.Start, Config: rawTest, Results: res,
		Nemesis: nem, History: h.Events, HistoryTruncated: h.Truncated, ApplyLog: applyLog, StartWall: startWall}
	page.Monitor, page.MonitorNote = readMonitor(run.Path(store.MonitorFile))
	page.Resources, page.ResourcesNote = readResources(run.Path(store.ResourcesFile))
	if err := report.Write(out.Report, page); err != nil {
		return out, fmt.Errorf("write report: %w", err)
	}
	return out, nil
}

// CheckGate checks a gate given to `chaos check` against the run in dir,
// before anything is judged: it must name checkers of the run's own
// workload (test.json's; the lock for a run from before --workload or
// without a test.json). An empty gate is refused naming them.
func CheckGate(dir string, gate []string) error {
	var tf testFile
	p := filepath.Join(dir, store.TestFile)
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", p, err)
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &tf); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	spec, err := workloads.Lookup(cmp.Or(tf.Workload, workloads.LockName))
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if len(gate) == 0 {
		return setting.Refused("Gate", "%s is empty: give one or more of %s, or leave it out for the run's own gate",
			setting.Name("Gate"), strings.Join(workloads.CheckerNames(spec), ", "))
	}
	if err := workloads.ValidateGate(spec, gate); err != nil {
		return setting.Err("Gate", "", err)
	}
	return nil
}

// reexport exports the audit table of a postgres run whose controller
// died again, from the data directory it left, so the apply log holds
// every committed row (the live export lags up to a poll). A run that
// ended cleanly has no data directory left, and nothing is done. When it
// cannot be done (not root, the server still running) the log is checked
// as it is, and the reason is logged.
func reexport(ctx context.Context, run *store.Run) {
	var tf struct {
		RunID    string `json:"run_id"`
		Resource string `json:"resource"`
	}
	b, err := os.ReadFile(run.Path(store.TestFile))
	if err != nil || json.Unmarshal(b, &tf) != nil || tf.Resource != ResourcePostgres ||
		!pgfence.Leftover(run.Path(store.PostgresDir)) {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	n, err := pgfence.Reexport(rctx, run.Path(store.PostgresDir), run.Path(store.ApplyLogFile), proc.Env(tf.RunID, proc.Self()))
	if err != nil {
		slog.Warn("postgres run left its data directory, but its audit table could not be exported again: checking the apply log as the run left it", "err", err)
		return
	}
	slog.Info("postgres run left its data directory: its audit table was exported again into the apply log", "entries", n)
}

// validateCheck checks what judges the run: the gate among the
// workload's checkers (an unknown workload is validateWorkload's to
// report), stopping at the first violation (which needs a checker of the
// gate that runs online or judges the run so far), and the checkers'
// budget.
func validateCheck(c Config) []error {
	var errs []error
	if c.CheckBudget < 0 {
		errs = append(errs, setting.Errorf("CheckBudget", c.CheckBudget.String(), "must not be negative"))
	}
	wl, err := c.NewWorkload()
	if err != nil {
		return errs // validateWorkload reports it
	}
	if len(c.Gate) == 0 {
		return append(errs, setting.Refused("Gate", "%s is empty: give one or more of %s", setting.Name("Gate"), strings.Join(workloads.CheckerNames(wl), ", ")))
	}
	if err := workloads.ValidateGate(wl, c.Gate); err != nil {
		return append(errs, setting.Err("Gate", "", err))
	}
	if c.StopAtFirst && len(c.stopCheckers(wl)) == 0 {
		errs = append(errs, setting.Errorf("StopAtFirst", "", "no checker of the gate (%s) can find a violation while the run lasts (%s can)", strings.Join(c.Gate, ","), strings.Join(c.allOnline(), ", ")))
	}
	return errs
}
