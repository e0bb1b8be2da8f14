package runner

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
)

// TestRecordNew: a new run's record writes test.json (the configuration
// and what identifies the run) and a new history its parts record into.
func TestRecordNew(t *testing.T) {
	t0 := time.Now()
	run, err := store.Create(t.TempDir(), "record", t0)
	if err != nil {
		t.Fatal(err)
	}
	st, cancel := newRunState(context.Background(), run, testlog.Logger(t), nil, store.Status{})
	defer cancel()
	r := &record{st: st, cfg: Defaults(), exe: "/bin/chaos", runID: "abcd1234", t0: t0, origin: t0}
	first, err := r.open([]string{"chaos", "run"}, "loopback", "127.0.0.1:2181")
	if err != nil || first != 0 {
		t.Fatalf("open: first process %d, %v", first, err)
	}
	if _, err := r.rec.Append(history.Event{Process: 0, Type: history.Invoke, F: history.FAcquire, Key: "SKU-1"}); err != nil {
		t.Fatal(err)
	}
	if err := r.hist.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(run.Path(store.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	var tf testFile
	if err := json.Unmarshal(b, &tf); err != nil {
		t.Fatal(err)
	}
	if tf.RunID != "abcd1234" || tf.NetMode != "loopback" || tf.Executable != "/bin/chaos" || tf.Workers != Defaults().Workers || !tf.Start.Equal(t0) {
		t.Errorf("test.json: %+v", tf)
	}
	got, err := history.ReadFile(run.Path(store.HistoryFile))
	if err != nil || len(got.Events) != 1 {
		t.Errorf("history: %v, %v", got.Events, err)
	}
}
