package chaostest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/nemesis"
)

// Sequence writes a schedule (chaos run --schedule) of faults one after
// another, in t's own folder: the first at 1 s, each held hold, the next
// as soon as the one before is undone. It returns the flags of a run
// that follows it to its end and stops there: --schedule,
// --stop-after-schedule, and a time limit that only bounds it.
//
// One run of several faults, each injected exactly once, shows each of
// them as well as a run of its own would: nothing is drawn, so none is
// missed, and each fault's start and undo are verified on their own in
// the history, the undo of a server fault only once the ensemble is whole
// again, so the next one starts on a whole ensemble. It costs one
// ensemble's start and end instead of one per fault. An entry starts late
// by however long the starts and undos before it took (a start that
// waits for a new leader, a restart: 5 to 8 s on a loaded machine); a run
// that ran its time limit would leave out an entry that no longer fits,
// so the run ends after the last entry instead, whenever that is, and
// the time limit, room a fault, is there only for a run that hangs.
func Sequence(t *testing.T, hold time.Duration, faults ...string) []string {
	t.Helper()
	var entries []nemesis.Entry
	at := time.Second
	for _, f := range faults {
		entries = append(entries, nemesis.Entry{Offset: nemesis.Duration(at), Fault: f, Hold: nemesis.Duration(hold)})
		at += hold
	}
	file := filepath.Join(t.TempDir(), "schedule.json")
	if err := nemesis.WritePlan(file, entries); err != nil {
		t.Fatal(err)
	}
	const room = 30 * time.Second
	limit := at + time.Duration(len(faults))*room
	return []string{"--schedule", file, "--stop-after-schedule", "--time-limit", limit.String()}
}
