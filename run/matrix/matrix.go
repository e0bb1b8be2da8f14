// Package matrix is chaos test-all: a matrix of cells (recipe × nemesis ×
// fencing), each with the verdict it must get from each checker it names,
// run one `chaos run` at a time. A cell passes when what was measured
// equals what was expected, so a known-buggy recipe that is caught passes
// and one that slips through fails: the harness's teeth are tested as
// hard as the recipes.
package matrix

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/workloads"
)

// Cell is one configuration and what it must produce.
type Cell struct {
	Recipe string
	// Label names the subject in the cell's name when Recipe is long (an
	// exec: command line); Variant tells apart cells that differ only in
	// their Args (the zoo's controls).
	Label   string
	Variant string
	Nemesis []string
	Fencing string
	// Args are extra `chaos run` flags (time limit, interval, ...).
	Args []string
	// Expect is the verdict each named checker must give; checkers not
	// named are reported but not judged.
	Expect map[string]checker.Validity
	// Why says what the cell shows, for the table and the JUnit report.
	Why string
	// Smoke marks the cells CI runs on every change.
	Smoke bool
	// Cluster is the cell's --cluster backend; "" is local.
	Cluster string
	// Workload is the cell's --workload; "" is lock.
	Workload string
	// Service is the cell's --service; "" is ZooKeeper. Its recipe names
	// it already (redis-lock, etcd-mutex), so the name does not.
	Service string
	// Limit is how long the workload of a cell that stops at its first
	// violation (StopsAtFirst) may run without finding it, whatever Args
	// say; 0 is DefaultLimit. Other cells run the time Args give.
	Limit time.Duration
}

// DefaultLimit bounds a cell that runs until its first violation. Such a
// cell measures a rate per fault, and a loaded machine stretches every
// fault cycle: a fixed 15 s or 30 s then sees fewer faults and sometimes
// none that lands (an unfenced expire-holder cell, two cells at once
// beside another run, saw no double write in its three verified
// expiries), and the gate turned red for a correct client. The slowest
// cells measured (docs/measurements.md, three runs each) found theirs
// after the 2nd, 4th and 6th expiry, about 3.5 s apart (expire-holder),
// and after the 2nd, 2nd and 3rd pause, about 8 s apart (the unfenced
// election): two minutes hold some 30 and 14 of those, enough to miss
// at those rates about once in 5000 and once in 2500 runs (once in 60 at
// half that pace). A run stops at its violation, seconds in, so
// the limit costs time only where a cell fails anyway, and bounds what a
// failing matrix costs. A cell whose faults come slower or show the bug
// less often names a longer Limit (CURATOR-696's).
const DefaultLimit = 2 * time.Minute

// Name is recipe/nemesis/fencing, the handle --cells matches.
func (c Cell) Name() string {
	subject := c.Recipe
	if c.Label != "" {
		subject = c.Label
	}
	n := fmt.Sprintf("%s/%s/fencing-%s", subject, strings.Join(c.Nemesis, "+"), c.Fencing)
	if c.Workload != "" {
		n = c.Workload + ":" + n
	}
	if c.Variant != "" {
		n += "/" + c.Variant
	}
	if c.Cluster != "" {
		n += "/" + c.Cluster
	}
	return n
}

// RunArgs are the `chaos run` flags of the cell (without --results/--name).
func (c Cell) RunArgs(seed int64) []string {
	args := []string{"--recipe", c.Recipe, "--nemesis", strings.Join(c.Nemesis, ","),
		"--fencing", c.Fencing, "--seed", fmt.Sprint(seed)}
	if c.Cluster != "" {
		args = append(args, "--cluster", c.Cluster)
	}
	if c.Workload != "" {
		args = append(args, "--workload", c.Workload)
	}
	if c.Service != "" {
		args = append(args, "--service", c.Service)
	}
	// A cell that expects only violations gates its run on them, so
	// the run's own verdict is the cell's: chaos replay and chaos shrink
	// of it then look for those violations. It is also what a run that
	// stops at its first violation stops at: a gating checker's.
	if c.ExpectsOnlyViolations() {
		args = append(args, "--gate", strings.Join(slices.Sorted(maps.Keys(c.Expect)), ","))
	}
	if !c.StopsAtFirst() {
		return append(args, c.Args...)
	}
	// Its limit comes last, over the time Args give.
	args = append(args, "--stop-at-first")
	args = append(args, c.Args...)
	return append(args, "--time-limit", c.StopLimit().String())
}

// ExpectsOnlyViolations says every verdict the cell expects is invalid.
func (c Cell) ExpectsOnlyViolations() bool {
	for _, v := range c.Expect {
		if v != checker.Invalid {
			return false
		}
	}
	return len(c.Expect) > 0
}

// StopsAtFirst says the cell's run ends at its first violation (chaos run
// --stop-at-first), bounded by StopLimit, instead of running the time its
// Args give: every verdict it expects is invalid, and every checker it
// names can find a violation while the run lasts (progress.CanStop:
// online, or on the records so far). A cell that also expects a valid
// verdict (the comparison's stats), or a violation only a whole run can
// show (herd's measure, config-convergence's final version), runs its
// time.
func (c Cell) StopsAtFirst() bool {
	if !c.ExpectsOnlyViolations() {
		return false
	}
	spec, err := workloads.Lookup(cmp.Or(c.Workload, workloads.LockName))
	if err != nil {
		return false // the run refuses the workload, naming it
	}
	cs := spec.Checkers()
	for n := range c.Expect {
		if !progress.CanStop(cs, n) {
			return false
		}
	}
	return true
}

// StopLimit is the workload limit of a cell that stops at its first
// violation: Limit, or DefaultLimit; 0 for a cell that runs its time.
func (c Cell) StopLimit() time.Duration {
	if !c.StopsAtFirst() {
		return 0
	}
	return cmp.Or(c.Limit, DefaultLimit)
}

// ExpectString renders the expectation, e.g. "double-writer=false".
func (c Cell) ExpectString() string {
	var parts []string
	for _, k := range sortedKeys(c.Expect) {
		parts = append(parts, fmt.Sprintf("%s=%s", k, c.Expect[k]))
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Filter keeps the cells whose name matches any of the patterns (path.Match
// globs, or plain substrings), less those matching a pattern written
// !PATTERN (only exclusions: all cells less those). No patterns keeps all.
func Filter(cells []Cell, patterns []string) ([]Cell, error) {
	if len(patterns) == 0 {
		return cells, nil
	}
	var keep, drop []string
	for _, p := range patterns {
		if x, ok := strings.CutPrefix(p, "!"); ok {
			drop = append(drop, x)
		} else {
			keep = append(keep, p)
		}
	}
	var out []Cell
	for _, c := range cells {
		in, err := matchesAny(c.Name(), keep)
		if err != nil {
			return nil, err
		}
		excluded, err := matchesAny(c.Name(), drop)
		if err != nil {
			return nil, err
		}
		if (len(keep) == 0 || in) && !excluded {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s %s matches no cell (chaos test-all %s shows them)", setting.Name("Cells"), strings.Join(patterns, ","), setting.Name("List"))
	}
	return out, nil
}

// matchesAny says whether name matches one of the patterns: a glob
// against its leading segments, or a substring.
func matchesAny(name string, patterns []string) (bool, error) {
	for _, p := range patterns {
		ok, err := matchPrefix(p, name)
		if err != nil {
			return false, fmt.Errorf("%s pattern %q: %w", setting.Name("Cells"), p, err)
		}
		if ok || strings.Contains(name, p) {
			return true, nil
		}
	}
	return false, nil
}

// matchPrefix matches a glob against the name or any leading run of its
// segments, so "herd/*" selects every herd cell without spelling out the
// fencing segment.
func matchPrefix(pattern, name string) (bool, error) {
	segs := strings.Split(name, "/")
	for k := len(segs); k >= 1; k-- {
		ok, err := path.Match(pattern, strings.Join(segs[:k], "/"))
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// Smoke keeps the cells marked for CI.
func Smoke(cells []Cell) []Cell {
	var out []Cell
	for _, c := range cells {
		if c.Smoke {
			out = append(out, c)
		}
	}
	return out
}
