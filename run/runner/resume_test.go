package runner

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
)

// soakFolder writes a run folder as a killed soak leaves it, changed by
// edit, and returns it.
func soakFolder(t *testing.T, edit func(*testFile, *store.Status)) string {
	t.Helper()
	dir := t.TempDir()
	cfg := Defaults()
	cfg.Soak, cfg.ACL = true, ACLOff
	tf := testFile{Config: cfg, RunID: "deadbeef", Start: time.Now(), StartWall: time.Now().UnixNano(), ControllerPID: 1 << 30}
	st := store.Status{Phase: store.PhaseWorkload, ControllerPID: 1 << 30}
	edit(&tf, &st)
	b, err := json.Marshal(tf)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{store.TestFile: b, store.HistoryFile: nil} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.WriteStatus(filepath.Join(dir, store.StatusFile), st); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLoadResume: a killed local soak with --acl off resumes; every other
// folder is refused, naming why, before anything starts.
func TestLoadResume(t *testing.T) {
	r, err := LoadResume(soakFolder(t, func(*testFile, *store.Status) {}))
	if err != nil {
		t.Fatalf("a killed soak: %v", err)
	}
	if r.segmentNo() != 2 || r.lastRunID() != "deadbeef" {
		t.Errorf("segment %d, last run %s; want 2 and deadbeef", r.segmentNo(), r.lastRunID())
	}
	for _, c := range []struct {
		name string
		edit func(*testFile, *store.Status)
		want string
	}{
		{"not a soak", func(tf *testFile, _ *store.Status) { tf.Soak = false }, "not a soak"},
		{"docker", func(tf *testFile, _ *store.Status) { tf.Cluster = "docker" }, "local backend only"},
		{"acl on", func(tf *testFile, _ *store.Status) { tf.ACL = ACLOn }, "ran with acl on"},
		{"finished", func(_ *testFile, st *store.Status) {
			st.Phase, st.StoppedBecause = store.PhaseDone, store.StopTimeLimit
		}, "finished"},
		{"live controller", func(_ *testFile, st *store.Status) { st.ControllerPID = os.Getpid() }, "still alive"},
	} {
		_, err := LoadResume(soakFolder(t, c.edit))
		if !errors.Is(err, ErrResume) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want a refusal naming %q", c.name, err, c.want)
		}
	}
	if _, err := LoadResume(t.TempDir()); !errors.Is(err, ErrResume) || !strings.Contains(err.Error(), "not a run folder") {
		t.Errorf("an empty folder: err %v", err)
	}
}

// TestAppendHistory: the resume completes the open invocations as info,
// numbers the new processes above every old one, and keeps the clock.
func TestAppendHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.HistoryFile)
	origin := time.Now().Add(-time.Minute)
	w, err := history.Create(path, origin)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []history.Event{
		{Process: 0, Type: history.Invoke, F: history.FAcquire, Key: "k"},
		{Process: 0, Type: history.OK, F: history.FAcquire, Key: "k"},
		{Process: 7, Type: history.Invoke, F: history.FAcquire, Key: "k"},
		{Process: 0, Type: history.Invoke, F: history.FWrite, Key: "k"},
	} {
		if _, err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, a, err := appendHistory(path, origin)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if a.first != 8 || a.interrupted != 2 || a.lastNS <= 0 {
		t.Errorf("appended %+v, want first process 8, 2 interrupted", a)
	}
	res, err := history.ReadFile(path)
	if err != nil || len(res.Events) != 6 {
		t.Fatalf("%d events (%v), want 6", len(res.Events), err)
	}
	for _, e := range res.Events[4:] {
		if e.Type != history.Info || e.Error != interruptedError || e.Time < int64(time.Minute) {
			t.Errorf("completion %+v, want info, interrupted, on the first segment's clock", e)
		}
	}
	if res.Events[4].Process != 7 || res.Events[5].F != history.FWrite {
		t.Errorf("completions %+v %+v, want process 7's acquire and process 0's write in history order", res.Events[4], res.Events[5])
	}
}
