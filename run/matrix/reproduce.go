package matrix

import (
	"fmt"
	"path/filepath"

	"github.com/zkchaos/zkchaos/internal/shellword"
)

// Reproduction is what a cell that did not come out as expected (wrong,
// unknown, or a harness error) says to rerun it, the same text in the
// summary, the JUnit failure and the index page: "reproduce: EXE replay
// DIR", a command a user can paste (exe is the running chaos binary's
// absolute path, DIR the run's folder made absolute), or, when the run
// made no folder (it was refused), that there is nothing to replay. A
// cell as expected or skipped has none (""). The run replayed is the
// first attempt whose outcome is the cell's, else the first one not as
// expected that has a folder.
func Reproduction(exe string, r CellResult) string {
	if r.Outcome == Pass || r.Outcome == Skipped {
		return ""
	}
	a, ok := replayed(r)
	if !ok {
		return "nothing to replay: no attempt ran"
	}
	if a.Dir == "" {
		return fmt.Sprintf("nothing to replay: the run of seed %d made no folder", a.Seed)
	}
	dir, err := filepath.Abs(a.Dir)
	if err != nil {
		dir = a.Dir
	}
	if exe == "" {
		exe = "chaos"
	}
	line := "reproduce: " + shellword.Join(exe, "replay", dir)
	if violated(a) {
		line += "; shrink: " + shellword.Join(exe, "shrink", dir)
	}
	return line
}

// violated says whether the attempt's run was invalid (exit 1): a
// gating checker found a violation, which is what chaos shrink looks
// for. A cell's expected checker outside the run's gate that found one
// does not make the run invalid, and chaos shrink would refuse it.
func violated(a Attempt) bool { return a.Exit == 1 }

// ToShrink is the run folder chaos gate --shrink shrinks: that of the
// first cell judged wrong that expected the subject valid (a violation
// in the subject, not a fault the harness failed to show), from its
// first attempt whose run was invalid; false when there is none.
func ToShrink(rs []CellResult) (string, bool) {
	for _, r := range rs {
		if r.Outcome != Wrong || r.Cell.ExpectsViolation() {
			continue
		}
		for _, a := range r.Attempts {
			if a.Dir != "" && violated(a) {
				return a.Dir, true
			}
		}
	}
	return "", false
}

// replayed picks the attempt Reproduction replays: one that made the
// cell's outcome and has a folder, else any not as expected with a
// folder, else the first not as expected (which then made none).
func replayed(r CellResult) (Attempt, bool) {
	var first *Attempt
	for _, same := range []bool{true, false} {
		for i, a := range r.Attempts {
			if a.Outcome == Pass || (same && a.Outcome != r.Outcome) {
				continue
			}
			if a.Dir != "" {
				return a, true
			}
			if first == nil {
				first = &r.Attempts[i]
			}
		}
	}
	if first == nil {
		return Attempt{}, false
	}
	return *first, true
}
