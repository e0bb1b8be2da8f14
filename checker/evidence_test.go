package checker_test

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/config"
	"github.com/zkchaos/zkchaos/checker/election"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/linear"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/history"
)

// TestTally reads each checker's real evidence type, as it comes back
// from results.json, the way the compare page does.
func TestTally(t *testing.T) {
	cases := []struct {
		name    string
		details any
		want    map[string]int
	}{
		{"double-writer by kind", fence.DoubleWriterDetails{ViolationCounts: map[string]int{"lost-update": 3, "token-regression": 2, "interleaved": 0}},
			map[string]int{"lost-update": 3, "token-regression": 2}},
		{"double-writer none", fence.DoubleWriterDetails{ViolationCounts: map[string]int{"lost-update": 0}}, nil},
		{"grant-overlap count fields", lock.GrantOverlapDetails{OverlapCount: 2, FalseReleaseCount: 1, Excused: map[string]int{"expired": 4}},
			map[string]int{"overlaps": 2, "false releases": 1}},
		{"excused overlaps are not violations", election.LeaderOverlapDetails{ExcusedCount: 5}, nil},
		{"liveness stalls by kind", lock.LivenessDetails{Stalls: []lock.Stall{{Kind: lock.StallFreeWithWaiters}, {Kind: lock.StallFreeWithWaiters}, {Kind: lock.StallNoAcquisition}}},
			map[string]int{lock.StallFreeWithWaiters: 2, lock.StallNoAcquisition: 1}},
		{"porcupine failing keys", linear.LinearDetails{Model: "register", FailingKeys: []string{"a", "b"}}, map[string]int{"keys not linearizable": 2}},
		{"config violation count", config.MonotonicDetails{ViolationCount: 4}, map[string]int{"violations": 4}},
		{"stats has none", stats.StatsDetails{Timeouts: 3}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checker.Tally(roundTrip(t, checker.Result{Valid: checker.Invalid, Details: c.details}))
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Tally = %v, want %v", got, c.want)
			}
		})
	}
	if got := checker.Tally(checker.Result{Valid: checker.Unknown}); got != nil {
		t.Fatalf("no details: %v", got)
	}
}

func TestFirstViolation(t *testing.T) {
	run := lock.TokenOrderDetails{FirstViolationTimeNS: history.Int64(int64(2 * time.Second))}
	wall := fence.DoubleWriterDetails{FirstViolationAfterNS: history.Int64(int64(3 * time.Second))}
	for _, c := range []struct {
		details any
		want    time.Duration
	}{{run, 2 * time.Second}, {wall, 3 * time.Second}} {
		d := checker.FirstViolation(roundTrip(t, checker.Result{Valid: checker.Invalid, Details: c.details}))
		if d == nil || *d != c.want {
			t.Fatalf("%T: FirstViolation = %v, want %s", c.details, d, c.want)
		}
	}
	if d := checker.FirstViolation(roundTrip(t, checker.Result{Valid: checker.Valid, Details: lock.TokenOrderDetails{}})); d != nil {
		t.Fatalf("no violation: %v", *d)
	}
}

// roundTrip writes r into a results.json and reads it back.
func roundTrip(t *testing.T, r checker.Result) checker.Result {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.json")
	if err := checker.WriteResults(path, checker.Results{Checkers: map[string]checker.Result{"c": r}}); err != nil {
		t.Fatal(err)
	}
	res, err := checker.ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	return res.Checkers["c"]
}
