package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAppendContinues: Append keeps every event already written, cuts a
// line torn by a killed writer, continues the indexes after the last
// kept event, and measures times from the origin it is given.
func TestAppendContinues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	torn := line3[:len(line3)/2]
	if err := os.WriteFile(path, []byte(line1+"\n"+line2+"\n"+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	origin := time.Now().Add(-time.Hour)
	w, old, err := Append(path, origin)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != 2 || old[1].Index != 1 {
		t.Fatalf("events found: %+v, want the two whole lines", old)
	}
	e, err := w.Append(Event{Process: 3, Type: Invoke, F: FAcquire, Key: "SKU-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if e.Index != 2 || e.Time < int64(time.Hour) {
		t.Errorf("appended event index %d time %d, want 2 and at least an hour after the origin", e.Index, e.Time)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), line1+"\n"+line2+"\n{") || strings.Contains(string(b), torn+"\n") {
		t.Errorf("file after the append:\n%s", b)
	}
	res, err := ReadFile(path)
	if err != nil || res.Truncated || len(res.Events) != 3 {
		t.Errorf("read back: %d events, truncated %v, err %v; want 3 whole events", len(res.Events), res.Truncated, err)
	}
}

func TestAppendMissing(t *testing.T) {
	if _, _, err := Append(filepath.Join(t.TempDir(), "none.jsonl"), time.Now()); err == nil {
		t.Error("appending to a history that does not exist: no error")
	}
}
