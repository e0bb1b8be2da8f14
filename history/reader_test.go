package history

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	line1 = `{"index":0,"time":10,"process":0,"type":"invoke","f":"acquire","key":"SKU-1","value":null,"error":""}`
	line2 = `{"index":1,"time":20,"process":0,"type":"ok","f":"acquire","key":"SKU-1","value":{"token":5,"node":"/l/n-5"},"error":""}`
	line3 = `{"index":2,"time":30,"process":"nemesis","type":"invoke","f":"pause","key":"","value":{"target":"worker-0"},"error":""}`
)

func TestReadTruncatedLastLine(t *testing.T) {
	in := line1 + "\n" + line2 + "\n" + line3[:len(line3)/2]
	res, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Events) != 2 {
		t.Fatalf("truncated=%v events=%d, want true and 2", res.Truncated, len(res.Events))
	}
	if res.Events[1].Value == nil || res.Events[1].Value.Token == nil || *res.Events[1].Value.Token != 5 {
		t.Errorf("second event = %+v", res.Events[1])
	}
}

func TestReadCompleteLastLineWithoutNewline(t *testing.T) {
	res, err := Read(strings.NewReader(line1 + "\n" + line2))
	if err != nil || res.Truncated || len(res.Events) != 2 {
		t.Fatalf("events=%d truncated=%v err=%v", len(res.Events), res.Truncated, err)
	}
}

func TestReadGarbageInTheMiddle(t *testing.T) {
	in := line1 + "\n\n" + line2 + "\n{not json\n" + line3 + "\n"
	_, err := Read(strings.NewReader(in))
	if err == nil {
		t.Fatal("no error for a damaged middle line")
	}
	// Line 2 is blank and still counts: the number must match an editor's.
	if !strings.Contains(err.Error(), "line 4") {
		t.Errorf("error %q does not name line 4", err)
	}
}

func TestReadGarbageWithNewlineAtTheEnd(t *testing.T) {
	// A complete line (with its newline) was written whole, so garbage
	// there is damage, not a crash mid-write.
	_, err := Read(strings.NewReader(line1 + "\n{not json\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want one naming line 2", err)
	}
}

func TestReadBadType(t *testing.T) {
	bad := strings.Replace(line2, `"type":"ok"`, `"type":"done"`, 1)
	_, err := Read(strings.NewReader(line1 + "\n" + bad + "\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "done") {
		t.Fatalf("err = %v", err)
	}
	noF := strings.Replace(line2, `"f":"acquire"`, `"f":""`, 1)
	if _, err := Read(strings.NewReader(noF + "\n" + line1 + "\n")); err == nil {
		t.Error("an event without f was accepted")
	}
}

func TestProcessJSON(t *testing.T) {
	for _, c := range []struct {
		p    Process
		json string
	}{{Nemesis, `"nemesis"`}, {0, `0`}, {7, `7`}, {123456, `123456`}} {
		b, err := json.Marshal(c.p)
		if err != nil || string(b) != c.json {
			t.Errorf("marshal %d = %s, %v; want %s", c.p, b, err, c.json)
		}
		var back Process
		if err := json.Unmarshal(b, &back); err != nil || back != c.p {
			t.Errorf("round trip %s = %d, %v", b, back, err)
		}
	}
	for _, bad := range []string{`-1`, `"worker"`, `1.5`, `null`} {
		var p Process
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("unmarshal %s: no error", bad)
		}
	}
}

func TestWriterReaderRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Process: 0, Type: Invoke, F: FAcquire, Key: "SKU-1"},
		{Process: 0, Type: OK, F: FAcquire, Key: "SKU-1", Value: &Value{Token: Int64(5), Node: "/l/n-5", Session: "0x1"}},
		{Process: Nemesis, Type: Invoke, F: FPause, Value: &Value{Target: "worker-0"}},
		{Process: Nemesis, Type: OK, F: FPause, Value: &Value{Target: "worker-0", PID: 42, Verified: Bool(true)}},
		{Process: 0, Type: Invoke, F: FWrite, Key: "SKU-1", Value: &Value{N: Int64(1)}},
		{Process: 0, Type: Info, F: FWrite, Key: "SKU-1", Error: "timeout"},
		{Process: 1, Type: Invoke, F: FSession, Value: &Value{State: "expired"}},
		{Process: 1, Type: OK, F: FSession, Value: &Value{State: "expired"}},
	}
	for _, e := range want {
		if _, err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := w.Append(want[0]); err == nil {
		t.Error("append after close succeeded")
	}
	res, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Truncated || len(res.Events) != len(want) {
		t.Fatalf("truncated=%v events=%d, want %d", res.Truncated, len(res.Events), len(want))
	}
	for i, got := range res.Events {
		if got.Index != int64(i) {
			t.Errorf("event %d has index %d", i, got.Index)
		}
		if i > 0 && got.Time < res.Events[i-1].Time {
			t.Errorf("event %d time %d before previous %d", i, got.Time, res.Events[i-1].Time)
		}
		w := want[i]
		w.Index, w.Time = got.Index, got.Time
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("event %d:\n got %s\nwant %s", i, gb, wb)
		}
	}
	if res.Events[2].Process != Nemesis {
		t.Errorf("nemesis came back as %v", res.Events[2].Process)
	}
}

func TestReadFileMissing(t *testing.T) {
	_, err := ReadFile(filepath.Join(t.TempDir(), "nope.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "open history") {
		t.Fatalf("err = %v", err)
	}
}
