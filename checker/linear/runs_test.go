package linear

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
)

// TestRecordedRuns re-checks the run folders that ZKCHAOS_LINEAR_RUNS (a
// glob of run folders) names, read-only: the segmented register and
// mutex checks must give the verdicts their results.json recorded, and
// the whole check's. Opt-in: run folders are not part of the repository.
func TestRecordedRuns(t *testing.T) {
	pattern := os.Getenv("ZKCHAOS_LINEAR_RUNS")
	if pattern == "" {
		t.Skip("set ZKCHAOS_LINEAR_RUNS to a glob of run folders")
	}
	dirs, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range dirs {
		res, err := checker.ReadResults(filepath.Join(dir, "results.json"))
		if err != nil {
			continue // a run still going, or not a run
		}
		h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var tf struct {
			Fencing string `json:"fencing"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "test.json")); err == nil {
			if err := json.Unmarshal(b, &tf); err != nil {
				t.Fatal(err)
			}
		}
		in := checker.Input{History: h.Events, Fencing: tf.Fencing, Budget: time.Minute}
		for name, check := range map[string]func(context.Context, checker.Input) checker.Result{NameRegister: CheckRegister, NameMutex: CheckMutex} {
			rec, ok := res.Checkers[name]
			if !ok {
				continue
			}
			seg, ref := check(context.Background(), in), whole(name, in)
			d := details(t, seg)
			t.Logf("%s %s: recorded %v, segmented %v (%d segments over %d keys, uncut %v), whole %v",
				dir, name, rec.Valid, seg.Valid, d.Segments, d.Partitions, d.UncutKeys, ref.Valid)
			if seg.Valid != rec.Valid || seg.Valid != ref.Valid {
				t.Errorf("%s %s: recorded %v, segmented %v (%s), whole %v", dir, name, rec.Valid, seg.Valid, seg.Error, ref.Valid)
			}
			n++
		}
	}
	t.Logf("%d verdicts compared", n)
}
