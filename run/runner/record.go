package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/nemesis"
)

// record is what the run writes of itself beside its parts' own files:
// test.json (the configuration and what identifies the run, and a
// resumed soak's segments) and the history, new or appended to.
type record struct {
	st    *runState
	cfg   Config
	exe   string
	runID string
	t0    time.Time
	// resume is the soak this controller resumes (nil: a new run);
	// origin is the history's clock origin (t0, or the first segment's
	// start).
	resume *Resumable
	origin time.Time

	hist *history.Writer
	rec  history.Recorder // hist, as the run's parts record: the progress tracker sees every event
	// plan is schedule.json, where the nemesis writes each fault it
	// injects.
	plan *nemesis.PlanLog
}

// openHistory writes test.json and opens the history: both new, or for a
// resumed soak the segments recorded and the history appended to, its
// interrupted operations completed as info.
func (r *record) open(args []string, netMode, connect string) (firstProcess int, err error) {
	// A resumed soak goes on in its schedule.json: its new entries
	// count from the new segment's first client operation.
	if r.plan, err = nemesis.CreatePlanLog(r.st.run.Path(store.ScheduleFile), r.resume == nil); err != nil {
		return 0, err
	}
	if r.resume == nil {
		if err := r.writeTestFile(args, netMode); err != nil {
			return 0, err
		}
		hist, err := history.Create(r.st.run.Path(store.HistoryFile), r.t0)
		if err != nil {
			return 0, err
		}
		r.hist, r.rec = hist, r.st.track.Recorder(hist)
		return 0, nil
	}
	hist, a, err := appendHistory(r.st.run.Path(store.HistoryFile), r.origin)
	if err != nil {
		return 0, err
	}
	r.hist, r.rec = hist, r.st.track.Recorder(hist)
	r.st.log.Info("soak resumed", "segment", r.resume.segmentNo(), "interrupted_completed_info", a.interrupted, "first_process", a.first)
	return a.first, r.writeResumeTestFile(a, connect)
}

func (r *record) writeTestFile(args []string, netMode string) error {
	host, _ := os.Hostname()
	u := ""
	if cu, err := user.Current(); err == nil {
		u = cu.Username
	}
	tf := testFile{Config: r.cfg, RunID: r.runID, Start: r.t0, StartWall: r.t0.UnixNano(),
		ControllerPID: os.Getpid(), Executable: r.exe, Args: args, NetMode: netMode, Host: host,
		User: u, GoVersion: runtime.Version()}
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return fmt.Errorf("encode test.json: %w", err)
	}
	if err := os.WriteFile(r.st.run.Path(store.TestFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write test.json: %w", err)
	}
	return nil
}
