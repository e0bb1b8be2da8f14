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
// that follows it: --schedule and a time limit that holds every
// entry with room to run late.
//
// One run of several faults, each injected exactly once, shows each of
// them as well as a run of its own would: nothing is drawn, so none is
// missed, and each fault's start and undo are verified on their own in
// the history, the undo of a server fault only once the ensemble is whole
// again, so the next one starts on a whole ensemble. It costs one
// ensemble's start and end instead of one per fault. The room, 4 s a
// fault: an entry starts late by however long the starts and undos
// before it took, and one that no longer fits the workload would be left
// out. A start that watches for a new leader and a restart take up to
// 5 s together for a container on a loaded machine, most others well
// under a second.
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
	const room = 4 * time.Second
	limit := at + time.Second + time.Duration(len(faults))*room
	return []string{"--schedule", file, "--time-limit", limit.String()}
}
