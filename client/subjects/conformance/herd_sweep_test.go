package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// sweepEnv turns the herd sweep on (any non-empty value); the package's
// other tests then skip. The sweep starts whole `chaos run`s, so wrap it in
// the lock of real runs:
//
//	ZKCHAOS_HERD_SWEEP=1 flock /tmp/zkchaos-real.lock \
//	    go test ./client/subjects/conformance -run TestHerdSweep -v -timeout 40m
//
// ZKCHAOS_HERD_SWEEP_CELLS limits it to some cells, comma-separated
// recipe:acquire-timeout:keys (curator:300ms:1,seed:5s:8);
// ZKCHAOS_HERD_SWEEP_TIME sets each run's --time-limit (default 15s).
const (
	sweepEnv      = "ZKCHAOS_HERD_SWEEP"
	sweepCellsEnv = "ZKCHAOS_HERD_SWEEP_CELLS"
	sweepTimeEnv  = "ZKCHAOS_HERD_SWEEP_TIME"
)

// sweepCell is one run of the sweep.
type sweepCell struct {
	recipe  string
	timeout string
	keys    int
}

func (c sweepCell) String() string { return fmt.Sprintf("%s:%s:%d", c.recipe, c.timeout, c.keys) }

// sweepCells is the grid: every correct recipe (the Go reference,
// go-zookeeper's lock, Curator), acquire timeouts from 300 ms to 5 s, one
// key (everyone queues on it) and eight.
func sweepCells() []sweepCell {
	var cells []sweepCell
	for _, r := range []string{"seed", "zk-lock", "curator"} {
		for _, to := range []string{"300ms", "1s", "5s"} {
			for _, k := range []int{1, 8} {
				cells = append(cells, sweepCell{r, to, k})
			}
		}
	}
	return cells
}

// herdRow is what one run's herd checker said.
type herdRow struct {
	cell     sweepCell
	exit     int
	valid    string
	perWake  string // the checker's wake-ups per acquire (or per hand-off)
	waiters  string
	acquires string
	err      string
}

// TestHerdSweep runs `chaos run --nemesis none` for every cell and prints
// the herd checker's verdict, wake-ups per acquire and mean waiters as a
// table. It fails if any correct recipe is not judged valid: the herd
// checker must flag a herd, never a recipe that watches its predecessor.
func TestHerdSweep(t *testing.T) {
	if os.Getenv(sweepEnv) == "" {
		t.Skip(sweepEnv + " not set: the sweep runs 18 real runs (minutes)")
	}
	if env.chaos == "" {
		t.Skip(env.skip)
	}
	limit := os.Getenv(sweepTimeEnv)
	if limit == "" {
		limit = "15s"
	}
	if _, err := time.ParseDuration(limit); err != nil {
		t.Fatalf("%s=%q: %v", sweepTimeEnv, limit, err)
	}
	cells, err := chooseCells(os.Getenv(sweepCellsEnv))
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	var rows []herdRow
	for _, c := range cells {
		row := runCell(t, c, limit, results)
		t.Logf("%s: exit %d, herd %s, wake-ups per acquire %s, mean waiters %s %s", c, row.exit, row.valid, row.perWake, row.waiters, row.err)
		rows = append(rows, row)
	}
	t.Log("herd sweep (--nemesis none, --time-limit " + limit + "):\n" + sweepTable(rows))
	for _, r := range rows {
		if r.valid != "true" {
			t.Errorf("%s: herd is %s, want valid for a correct recipe %s", r.cell, r.valid, r.err)
		}
	}
}

func chooseCells(spec string) ([]sweepCell, error) {
	all := sweepCells()
	if spec == "" {
		return all, nil
	}
	var out []sweepCell
	for _, s := range strings.Split(spec, ",") {
		i := -1
		for j, c := range all {
			if c.String() == strings.TrimSpace(s) {
				i = j
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("%s: no cell %q (cells are recipe:timeout:keys, e.g. %s)", sweepCellsEnv, s, all[0])
		}
		out = append(out, all[i])
	}
	return out, nil
}

// runCell runs one `chaos run` and reads its herd result.
func runCell(t *testing.T, c sweepCell, limit, results string) herdRow {
	row := herdRow{cell: c, valid: "-", perWake: "-", waiters: "-", acquires: "-"}
	name := strings.NewReplacer(":", "-", ".", "_").Replace(c.String())
	cmd := exec.Command(env.chaos, "run", "--recipe", c.recipe, "--nemesis", "none", "--acquire-timeout", c.timeout,
		"--keys", fmt.Sprint(c.keys), "--time-limit", limit, "--results", results, "--name", name)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		row.exit = ee.ExitCode()
	default:
		t.Fatalf("%s: chaos run: %v", c, err)
	}
	if row.exit == 255 {
		row.err = "harness failure: " + lastLine(string(out))
		return row
	}
	path := filepath.Join(results, name, "latest", "results.json")
	b, err := os.ReadFile(path)
	if err != nil {
		row.err = fmt.Sprintf("no results: %v", err)
		return row
	}
	var res struct {
		Checkers map[string]map[string]json.RawMessage `json:"checkers"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	herd, ok := res.Checkers["herd"]
	if !ok {
		row.err = "no herd result"
		return row
	}
	row.valid = raw(herd["valid"])
	row.waiters = raw(herd["mean_waiters"])
	// The herd checker's ratio: per acquire once it measures that, per
	// hand-off before; whichever the result has.
	for _, k := range []string{"wakeups_per_acquire", "wakeups_per_handoff"} {
		if v, ok := herd[k]; ok {
			row.perWake = raw(v)
			break
		}
	}
	for _, k := range []string{"acquires", "handoffs"} {
		if v, ok := herd[k]; ok {
			row.acquires = raw(v)
			break
		}
	}
	if e, ok := herd["error"]; ok {
		row.err = raw(e)
	}
	return row
}

// raw prints a JSON value of a result: integers as they are, other
// numbers to two places, strings without quotes.
func raw(m json.RawMessage) string {
	var f float64
	if json.Unmarshal(m, &f) == nil && strings.ContainsAny(string(m), ".eE") {
		return fmt.Sprintf("%.2f", f)
	}
	return strings.Trim(string(m), `"`)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func sweepTable(rows []herdRow) string {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].cell.recipe < rows[j].cell.recipe })
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "recipe\tacquire timeout\tkeys\texit\therd valid\twake-ups/acquire\tacquires\tmean waiters\terror")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", r.cell.recipe, r.cell.timeout, r.cell.keys, r.exit, r.valid, r.perWake, r.acquires, r.waiters, r.err)
	}
	tw.Flush()
	return b.String()
}
