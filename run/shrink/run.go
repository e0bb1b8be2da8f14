package shrink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/internal/shellword"
	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/report/compare"
	"github.com/zkchaos/zkchaos/report/runview"
	"github.com/zkchaos/zkchaos/run/replay"
	"github.com/zkchaos/zkchaos/run/runner"
	"github.com/zkchaos/zkchaos/workloads"
)

// The shrink's files, under the original's folder: Dir holds the
// candidates' schedules (a folder of the run, so that the run's settings
// apply to them, runner.SettingsOf), their runs under Dir/runs, and what
// it found.
const (
	Dir         = "shrink"
	MinimalFile = "minimal.json"
	ReportFile  = "shrink.json"
	CommandFile = "command.txt"
	CompareFile = "compare.html"
)

// ErrRefused is an original a shrink does not take; nothing was started.
var ErrRefused = errors.New("cannot shrink")

// Check refuses an original a shrink cannot work on: one with no
// gating violation to look for, one on an ensemble it does not own (a
// shrink's runs restart the ensemble each time, and an external one
// cannot be), and one already shrunk (its folder would mix two
// searches).
func Check(o *replay.Original) error {
	if len(o.Kinds) == 0 {
		return fmt.Errorf("%w %s: its violation is not a gating one (no gating checker found it invalid)", ErrRefused, o.Dir)
	}
	c, err := runner.LoadSettings(o.Settings)
	if err != nil {
		return err
	}
	if c.Cluster == "external" {
		return fmt.Errorf("%w %s: it ran on an external ensemble (%s external), which a shrink's runs cannot restart between attempts", ErrRefused, o.Dir, setting.Name("Cluster"))
	}
	if _, err := os.Lstat(filepath.Join(o.Dir, Dir)); err == nil {
		return fmt.Errorf("%w %s: %s exists, from an earlier shrink; move it away to shrink again", ErrRefused, o.Dir, filepath.Join(o.Dir, Dir))
	}
	return nil
}

// Options are how Run shrinks.
type Options struct {
	// Exe is the chaos binary each candidate's replays run.
	Exe  string
	Rate Rate
	// Out gets a line per step as it ends (and the replays' lines);
	// Progress the status of the replay under way. Both may be nil.
	Out      io.Writer
	Progress *progress.Latest
}

// Report is shrink.json: the original, the minimal scenario found, the
// command that reproduces it and its measured rate, and every step.
type Report struct {
	Original        string        `json:"original"`
	Kinds           []string      `json:"kinds"`
	Rate            string        `json:"rate"`
	OriginalToFirst time.Duration `json:"original_to_first_violation_ns,omitempty"`
	Before          Scenario      `json:"before"`
	BeforeEntries   int           `json:"before_entries"`
	// After is the minimal scenario and AfterEntries its entries; nil
	// when none was measured to reproduce at the rate.
	After        *Scenario `json:"after,omitempty"`
	AfterEntries int       `json:"after_entries"`
	Verdict      *Verdict  `json:"verdict,omitempty"`
	Minimal      string    `json:"minimal,omitempty"`
	Command      string    `json:"command,omitempty"`
	Compare      string    `json:"compare,omitempty"`
	// Interrupted says the budget ended before the search did.
	Interrupted bool          `json:"interrupted"`
	Took        time.Duration `json:"took_ns"`
	Steps       []Step        `json:"steps"`
}

// Found says a minimal scenario was measured to reproduce at the rate.
func (r *Report) Found() bool { return r.Verdict != nil && r.Verdict.OK }

// Run shrinks o (checked by Check) until the search ends or ctx does
// (the budget), then writes what it found under o.Dir/shrink: the
// minimal schedule, the command that runs it, the compare page between
// the original and the minimal scenario's reproducing run, and
// shrink.json. An error means the search or its files failed; the
// report then holds what was done.
func Run(ctx context.Context, o *replay.Original, opt Options) (*Report, error) {
	start := time.Now()
	dir := filepath.Join(o.Dir, Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shrink folder: %w", err)
	}
	orig, err := scenarioOf(o)
	if err != nil {
		return nil, err
	}
	last := lastFirst(o.Dir, o.Kinds)
	j := &judge{o: o, dir: dir, opt: opt, orig: orig}
	res := Shrink(ctx, orig, last, j.judge, func(st Step) {
		if opt.Out != nil {
			fmt.Fprintln(opt.Out, st.Line())
		}
	})
	rep := &Report{Original: o.Dir, Kinds: o.Kinds, Rate: opt.Rate.String(), OriginalToFirst: last, Before: orig,
		BeforeEntries: len(orig.Entries), Verdict: res.Verdict, Interrupted: ctx.Err() != nil, Steps: res.Steps}
	if rep.Found() {
		err = rep.writeMinimal(dir, opt.Exe, res.Best, orig)
	}
	rep.Took = time.Since(start)
	return rep, errors.Join(err, rep.writeJSON(filepath.Join(dir, ReportFile)))
}

// scenarioOf is the original's scenario: its schedule and settings.
func scenarioOf(o *replay.Original) (Scenario, error) {
	c, err := runner.LoadSettings(o.Settings)
	if err != nil {
		return Scenario{}, err
	}
	p, err := nemesis.ReadPlan(o.Schedule)
	if err != nil {
		return Scenario{}, err
	}
	s := Scenario{Entries: p.Entries, TimeLimit: c.TimeLimit, Workers: c.Workers}
	if c.Workload == workloads.LockName {
		s.Keys = c.Keys // the other workloads have no keys to lower
	}
	return s, nil
}

// lastFirst is the time from the run's first client operation to the
// first violation of the last of kinds to show, among those whose first
// violation the folder places (a checker that judges the whole history
// places none); 0 when it places none.
func lastFirst(dir string, kinds []string) time.Duration {
	var last time.Duration
	for _, k := range kinds {
		if f, err := runview.ReadFirst(os.DirFS(dir), k); err == nil && f.Found {
			last = max(last, f.After())
		}
	}
	return last
}

// judge replays candidates for real, each from its own schedule file
// under the shrink's folder.
type judge struct {
	o    *replay.Original
	dir  string
	opt  Options
	orig Scenario
	n    int
}

// judge replays s until its outcome against the rate is decided.
func (j *judge) judge(ctx context.Context, s Scenario) (Verdict, error) {
	j.n++
	file := filepath.Join(j.dir, fmt.Sprintf("candidate-%02d.json", j.n))
	v := Verdict{Schedule: file, Args: argsOf(s, j.orig)}
	if err := nemesis.WritePlan(file, s.Entries); err != nil {
		return v, err
	}
	res, err := replay.Run(ctx, j.o, replay.Options{Exe: j.opt.Exe, Repeat: j.opt.Rate.Of, Need: j.opt.Rate.Need,
		Results: filepath.Join(j.dir, "runs"), Schedule: file, Args: v.Args, Out: j.opt.Out, Progress: j.opt.Progress})
	v.Reproduced, v.Replays = res.Reproduced, len(res.Replays)
	v.OK = err == nil && res.Reproduced >= j.opt.Rate.Need
	for _, rp := range res.Replays {
		if !rp.Reproduced {
			continue
		}
		if v.Run == "" {
			v.Run = rp.Dir
		}
		v.ToFirst = max(v.ToFirst, lastFirst(rp.Dir, j.o.Kinds))
	}
	return v, err
}

// argsOf are the flags that set s's settings over the original's.
func argsOf(s, orig Scenario) []string {
	var args []string
	if s.TimeLimit != orig.TimeLimit {
		args = append(args, "--time-limit", s.TimeLimit.String())
	}
	if s.Workers != orig.Workers {
		args = append(args, "--workers", strconv.Itoa(s.Workers))
	}
	if s.Keys != orig.Keys {
		args = append(args, "--keys", strconv.Itoa(s.Keys))
	}
	return args
}

// writeMinimal writes the minimal schedule, the command that runs it and
// the compare page, and fills them in.
func (r *Report) writeMinimal(dir, exe string, best, orig Scenario) error {
	r.After, r.AfterEntries = &best, len(best.Entries)
	r.Minimal = filepath.Join(dir, MinimalFile)
	if err := nemesis.WritePlan(r.Minimal, best.Entries); err != nil {
		return err
	}
	r.Command = shellword.Join(append([]string{exe, "run", "--schedule", r.Minimal}, argsOf(best, orig)...)...)
	if err := store.WriteFileAtomic(filepath.Join(dir, CommandFile), []byte(r.Command+"\n")); err != nil {
		return fmt.Errorf("write %s: %w", CommandFile, err)
	}
	r.Compare = filepath.Join(dir, CompareFile)
	if err := comparePage(r.Compare, r.Original, r.Verdict.Run); err != nil {
		r.Compare = ""
		return err
	}
	return nil
}

// comparePage writes the compare page of runs a and b to path.
func comparePage(path, a, b string) error {
	var runs [2]*runview.Run
	for i, d := range []string{a, b} {
		r, err := runview.Load(os.DirFS(d), d)
		if err != nil {
			return fmt.Errorf("compare page: %s: %w", d, err)
		}
		runs[i] = r
	}
	return compare.Write(path, runs[0], runs[1], a, b)
}

// writeJSON writes r to path atomically.
func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", ReportFile, err)
	}
	if err := store.WriteFileAtomic(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", ReportFile, err)
	}
	return nil
}
