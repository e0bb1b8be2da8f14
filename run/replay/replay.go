// Package replay runs a stored run again (chaos replay): with the
// settings of its test.json and the faults of its schedule.json, each
// replay a `chaos run --schedule` of its own (package child), and says how
// many replays showed the violations the run showed: its reproduction
// rate. Run is a function of the original, the schedule to follow and the
// flags over its settings, so that a caller that tries smaller schedules
// or settings (a shrinker) measures each the same way.
package replay

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/report/runview"
	"github.com/zkchaos/zkchaos/run/child"
	"github.com/zkchaos/zkchaos/run/runner"
)

// ErrCannotReplay is an original that holds nothing certain to
// reproduce: never checked, checked unknown, incomplete, or recorded
// before runs kept their schedule. Nothing was started.
var ErrCannotReplay = errors.New("cannot replay")

// Original is a stored run as a replay reads it.
type Original struct {
	Dir      string
	Settings string // its test.json
	Schedule string // its schedule.json
	Results  checker.Results
	// Kinds are its violation kinds: the gating checkers that found a
	// violation, sorted.
	Kinds []string
	// ToFirst is its time from the first client operation to the first
	// violation of Kinds; nil when the folder does not say.
	ToFirst *time.Duration
}

// Load reads the run in dir and checks that it can be replayed: an
// error wrapping ErrCannotReplay when it holds nothing certain to
// reproduce, any other error when dir is no run or its schedule does not
// read (bad input). A valid original loads: it has nothing to reproduce
// (Valid), which is for the caller to say.
func Load(dir string) (*Original, error) {
	o := &Original{Dir: dir, Settings: filepath.Join(dir, store.TestFile), Schedule: filepath.Join(dir, store.ScheduleFile)}
	if _, err := store.Open(dir); err != nil {
		return nil, err
	}
	if _, err := runner.LoadSettings(o.Settings); err != nil {
		return nil, fmt.Errorf("%s is not a run folder: %w", dir, err)
	}
	cannot := func(format string, a ...any) error {
		return fmt.Errorf("%w %s: %s", ErrCannotReplay, dir, fmt.Sprintf(format, a...))
	}
	res, err := checker.ReadResults(filepath.Join(dir, store.ResultsFile))
	if err != nil {
		return nil, cannot("it was never checked, so there is no verdict to reproduce (%v); chaos check gives it one", err)
	}
	o.Results, o.Kinds = res, Kinds(res)
	switch cp := res.Completion; {
	case res.Valid == checker.Valid:
		return o, nil
	case cp != nil && !cp.Completed && !cp.StoppedAtFirst:
		return nil, cannot("the run is incomplete (%s): what it showed cannot be told apart from what it missed", cp.Why)
	case cp != nil && cp.Segments > 1:
		return nil, cannot("a resumed soak: its %d segments each count their schedule from their own start", cp.Segments)
	case res.Valid != checker.Invalid:
		return nil, cannot("its verdict is %s, not a violation: %s", res.Valid, strings.Join(res.Reasons, "; "))
	}
	if _, err := os.Stat(o.Schedule); errors.Is(err, os.ErrNotExist) {
		return nil, cannot("no %s: the run was recorded before runs kept their schedule", store.ScheduleFile)
	}
	if _, err := nemesis.ReadPlan(o.Schedule); err != nil {
		return nil, err
	}
	o.ToFirst = toFirst(dir, o.Kinds)
	return o, nil
}

// Valid reports whether the original was valid: nothing to reproduce.
func (o *Original) Valid() bool { return o.Results.Valid == checker.Valid }

// Kinds are the violation kinds of a checked run: its gating checkers
// that answered invalid, sorted.
func Kinds(res checker.Results) []string {
	var out []string
	for name, r := range res.Checkers {
		if r.Gating && r.Valid == checker.Invalid {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Options are how the original is replayed.
type Options struct {
	// Exe is the chaos binary each replay runs.
	Exe string
	// Repeat is how many replays (at least 1).
	Repeat int
	// Need, when above 0, stops the replays as soon as their outcome
	// against it is decided: Need of them reproduced, or too few left
	// to reach it. A caller that only asks "at least Need of Repeat?"
	// (a shrinker judging a candidate) then runs no replay that cannot
	// change the answer; 0 runs all Repeat.
	Need int
	// Results is the folder the replays' run folders go to.
	Results string
	// Schedule is the schedule each replay follows; "" is the
	// original's. One of the caller's must sit in the original's folder
	// or a folder of it, so that the original's settings apply
	// (runner.SettingsOf).
	Schedule string
	// Args are flags of chaos run over the original's settings
	// (--time-limit 20s), each logged by the replay as an override.
	Args []string
	// Kinds are the violation kinds a replay must show, every one, to
	// reproduce the original; nil is the original's.
	Kinds []string
	// Out gets a line per replay as it ends; Progress the status of the
	// replay under way (both may be nil).
	Out      io.Writer
	Progress *progress.Latest
}

// Replay is one replay's outcome.
type Replay struct {
	Dir  string `json:"dir"`
	Exit int    `json:"exit"`
	// Kinds are the violation kinds it showed; Reproduced says they
	// include every kind looked for.
	Kinds      []string      `json:"kinds"`
	Reproduced bool          `json:"reproduced"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	// ToFirst is its time from the first client operation to its first
	// violation of a kind looked for.
	ToFirst *time.Duration `json:"to_first_violation_ns,omitempty"`
	// Detail says why a replay has no verdict (its harness failed).
	Detail string `json:"detail,omitempty"`
}

// Result is replay.json.
type Result struct {
	Original string   `json:"original"`
	Schedule string   `json:"schedule"`
	Args     []string `json:"args,omitempty"`
	// Kinds are the violation kinds looked for; OriginalToFirst the
	// original's time to its first violation of them.
	Kinds           []string       `json:"kinds"`
	OriginalToFirst *time.Duration `json:"original_to_first_violation_ns,omitempty"`
	Repeat          int            `json:"repeat"`
	// Need, when above 0, is the rate's NEED: the replays stopped once
	// Need of them reproduced or Need could no longer be reached.
	Need int `json:"need,omitempty"`
	// Reproduced counts the replays that showed every kind: the
	// reproduction rate is Reproduced of Repeat.
	Reproduced int      `json:"reproduced"`
	Rate       float64  `json:"rate"`
	Replays    []Replay `json:"replays"`
}

// Run replays o Repeat times, one after the other, and measures the
// rate. ctx ending interrupts the replay under way (it still heals and
// checks) and starts no more. An error means a replay could not be
// started; the result (never nil) then holds those that ran.
func Run(ctx context.Context, o *Original, opt Options) (*Result, error) {
	sched, kinds := cmp.Or(opt.Schedule, o.Schedule), opt.Kinds
	if kinds == nil {
		kinds = o.Kinds
	}
	r := &Result{Original: o.Dir, Schedule: sched, Args: opt.Args, Kinds: kinds, OriginalToFirst: o.ToFirst, Repeat: opt.Repeat,
		Need: max(0, opt.Need)}
	if got, ok := runner.SettingsOf(sched); !ok || filepath.Clean(got) != filepath.Clean(o.Settings) {
		return r, fmt.Errorf("schedule %s: not kept in the folder of %s (or a folder of it), so the original's settings would not apply", sched, o.Dir)
	}
	if err := os.MkdirAll(opt.Results, 0o755); err != nil {
		return r, fmt.Errorf("replays' folder: %w", err)
	}
	args := append([]string{"--schedule", sched, "--results", opt.Results}, opt.Args...)
	for i := 0; i < opt.Repeat && ctx.Err() == nil && !r.Decided(); i++ {
		c, err := child.Run(ctx, child.Spec{Exe: opt.Exe, Args: args, Log: filepath.Join(opt.Results, "replay.log"),
			Latest: filepath.Join(opt.Results, "latest"), Progress: opt.Progress, Prefix: fmt.Sprintf("replay %d/%d ", i+1, opt.Repeat)})
		if err != nil {
			return r, fmt.Errorf("replay %d: %w", i+1, err)
		}
		rp := judge(c, kinds)
		r.Replays = append(r.Replays, rp)
		if rp.Reproduced {
			r.Reproduced++
		}
		if opt.Out != nil {
			fmt.Fprintf(opt.Out, "replay %d/%d: %s\n", i+1, opt.Repeat, rp)
		}
	}
	r.Rate = float64(r.Reproduced) / float64(max(1, len(r.Replays)))
	return r, nil
}

// Decided says whether the replays so far already settle whether Need of
// Repeat reproduce: Need of them did, or too few are left to reach it.
// Without a Need nothing is decided before every replay has run.
func (r *Result) Decided() bool {
	if r.Need <= 0 {
		return false
	}
	return r.Reproduced >= r.Need || r.Reproduced+r.Repeat-len(r.Replays) < r.Need
}

// judge reads one replay's verdict: its kinds, whether it reproduced
// kinds, and its time to the first violation of them.
func judge(c child.Result, kinds []string) Replay {
	rp := Replay{Dir: c.Dir, Exit: c.Exit, Elapsed: c.Elapsed}
	res, err := checker.ReadResults(filepath.Join(c.Dir, store.ResultsFile))
	if err != nil {
		rp.Detail = fmt.Sprintf("no verdict (exit %d): %v", c.Exit, err)
		return rp
	}
	rp.Kinds = Kinds(res)
	rp.Reproduced = len(kinds) > 0
	for _, k := range kinds {
		rp.Reproduced = rp.Reproduced && slices.Contains(rp.Kinds, k)
	}
	if rp.Reproduced {
		rp.ToFirst = toFirst(c.Dir, kinds)
	}
	return rp
}

// String is the replay's line: what it showed, how soon, where.
func (rp Replay) String() string {
	what := "not reproduced"
	switch {
	case rp.Detail != "":
		what = rp.Detail
	case rp.Reproduced:
		what = "reproduced"
	}
	shown := "no violation"
	if len(rp.Kinds) > 0 {
		shown = strings.Join(rp.Kinds, ",")
	}
	first := ""
	if rp.ToFirst != nil {
		first = fmt.Sprintf(", first violation %.1fs after the first client operation", rp.ToFirst.Seconds())
	}
	return fmt.Sprintf("%s (%s%s; exit %d, %.0fs) %s", what, shown, first, rp.Exit, rp.Elapsed.Seconds(), rp.Dir)
}

// Summary is the result in one line.
func (r *Result) Summary() string {
	first := ""
	if r.OriginalToFirst != nil {
		first = fmt.Sprintf(" (the original's first violation %.1fs after its first client operation)", r.OriginalToFirst.Seconds())
	}
	at := ""
	if r.Need > 0 {
		met := "met"
		if r.Reproduced < r.Need {
			met = "not met"
		}
		at = fmt.Sprintf("; %d of at most %d %s", r.Need, r.Repeat, met)
	}
	return fmt.Sprintf("reproduced %d of %d (rate %.2f%s): %s%s", r.Reproduced, len(r.Replays), r.Rate, at, strings.Join(r.Kinds, ","), first)
}

// Exit is the replays' worst exit, as chaos run's codes rank: a harness
// failure (255) over invalid (1) over unknown (2) over valid (0). A fix
// that holds makes every replay valid.
func (r *Result) Exit() int {
	worst := 0
	rank := map[int]int{0: 0, 2: 1, 1: 2, 255: 3}
	for _, rp := range r.Replays {
		code := rp.Exit
		if _, ok := rank[code]; !ok {
			code = 255
		}
		if rank[code] > rank[worst] {
			worst = code
		}
	}
	return worst
}

// toFirst is the run's time from its first client operation to the first
// violation of one of kinds; nil when its folder does not tell.
func toFirst(dir string, kinds []string) *time.Duration {
	f, err := runview.ReadFirst(os.DirFS(dir), kinds...)
	if err != nil || !f.Found {
		return nil
	}
	d := f.After()
	return &d
}

// WriteJSON writes r to path (replay.json) atomically.
func (r *Result) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", store.ReplayFile, err)
	}
	if err := store.WriteFileAtomic(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", store.ReplayFile, err)
	}
	return nil
}
