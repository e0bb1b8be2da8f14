package progress

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// TestTrackerCounts: the tracker counts what goes through its recorder:
// client completions by type (not invocations, not instant observations),
// and the fault from the nemesis' start and stop.
func TestTrackerCounts(t *testing.T) {
	tr := started()
	rec := tr.Recorder(history.NewMemory())
	ev := func(p history.Process, typ history.Type, f string, v *history.Value) {
		if _, err := rec.Append(history.Event{Process: p, Type: typ, F: f, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	fault := func() string {
		st, _ := tr.Status()
		return st.fault()
	}
	ev(1, history.Invoke, history.FAcquire, nil)
	ev(1, history.OK, history.FAcquire, nil)
	ev(2, history.Invoke, history.FWrite, nil)
	ev(2, history.Fail, history.FWrite, nil)
	ev(3, history.Invoke, history.FSession, nil) // an observation, not an operation
	ev(3, history.OK, history.FSession, nil)
	ev(history.Nemesis, history.Invoke, history.FPause, &history.Value{Target: "pause-holder"})
	if f := fault(); f != "pause-holder" {
		t.Errorf("while injecting: fault %q", f)
	}
	ev(history.Nemesis, history.OK, history.FPause, &history.Value{Target: "process 3 (pid 9) holding SKU-1", TargetProcess: history.Int(3)})
	if f := fault(); f != "pause-holder(p3)" {
		t.Errorf("in effect: fault %q", f)
	}
	ev(1, history.Info, history.FWrite, nil)
	ev(history.Nemesis, history.Invoke, history.FResume, &history.Value{Target: "process 3"})
	if f := fault(); f != "pause-holder(p3)" {
		t.Errorf("while healing: fault %q", f)
	}
	ev(history.Nemesis, history.OK, history.FResume, &history.Value{Target: "process 3"})
	if f := fault(); f != "none" {
		t.Errorf("after healing: fault %q", f)
	}
	ev(history.Nemesis, history.Invoke, history.FPause, &history.Value{Target: "pause-holder"})
	ev(history.Nemesis, history.Fail, history.FPause, &history.Value{Target: "pause-holder"})
	if f := fault(); f != "none" {
		t.Errorf("after a failed injection: fault %q", f)
	}
	st, _ := tr.Status()
	if st.OK != 1 || st.Fail != 1 || st.Info != 1 {
		t.Errorf("ok %d fail %d info %d, want 1 1 1", st.OK, st.Fail, st.Info)
	}
	var nilTracker *Tracker
	if r := history.Recorder(history.NewMemory()); nilTracker.Recorder(r) != r {
		t.Error("a nil tracker's recorder is not the recorder itself")
	}
}

// TestTrackerElapsed: setup counts from the start, the workload from its
// start, and the clock stops when the workload ends.
func TestTrackerElapsed(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := started()
	tr.now = func() time.Time { return now }
	tr.start = now
	now = now.Add(3 * time.Second)
	if st, _ := tr.Status(); st.Phase != "setup" || st.Elapsed != 3*time.Second {
		t.Errorf("setup: %+v", st)
	}
	tr.Workload(time.Minute)
	now = now.Add(20 * time.Second)
	if st, _ := tr.Status(); st.Phase != "workload" || st.Elapsed != 20*time.Second || st.Limit != time.Minute {
		t.Errorf("workload: %+v", st)
	}
	tr.Phase("final")
	now = now.Add(9 * time.Second)
	if st, _ := tr.Status(); st.Phase != "final" || st.Elapsed != 20*time.Second {
		t.Errorf("final: %+v", st)
	}
}

// appender writes apply-log entries to a real file as a register does.
type appender struct {
	t   *testing.T
	f   *os.File
	seq int64
}

func (a *appender) write(key string, token int64, process int, value int64) {
	a.seq++
	e := register.Entry{Seq: a.seq, Wall: time.Now().UnixNano(), Op: register.OpWrite, Key: key, Token: token,
		HasToken: true, Value: value, Process: process, Accepted: true, Mode: register.ModeOff}
	b, err := json.Marshal(e)
	if err != nil {
		a.t.Fatal(err)
	}
	// In two writes: a reader may catch the line half way.
	half := len(b) / 2
	if _, err := a.f.Write(b[:half]); err != nil {
		a.t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := a.f.Write(append(b[half:], '\n')); err != nil {
		a.t.Fatal(err)
	}
}

// TestTrackerFollow: the online double-writer counts violations as the
// log is appended, before it is complete, and logs the first.
func TestTrackerFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "register.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := started()
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	firsts := make(chan string, 10)
	go func() {
		done <- tr.Follow(ctx, path, []string{"integrity", fence.NameDoubleWriter}, slog.New(slog.NewTextHandler(&logs, nil)),
			func(c string) { firsts <- c })
	}()
	violations := func() int {
		st, _ := tr.Status()
		if len(st.Online) != 1 {
			return -1
		}
		return st.Online[0].Violations
	}
	waitFor := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for violations() != want {
			if time.Now().After(deadline) {
				t.Fatalf("violations = %d, want %d", violations(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	a := &appender{t: t, f: f}
	a.write("K", 5, 1, 1)
	a.write("K", 6, 2, 2)
	time.Sleep(3 * followPoll)
	waitFor(0)
	a.write("K", 5, 1, 2) // stale holder: regression, interleaving, lost update
	waitFor(3)
	a.write("K", 7, 3, 3)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := violations(); got != 3 {
		t.Errorf("after the end: %d violations, want 3", got)
	}
	if out := logs.String(); strings.Count(out, "first violation") != 1 || !strings.Contains(out, "seq=3") {
		t.Errorf("log: %s", out)
	}
	close(firsts)
	var told []string
	for c := range firsts {
		told = append(told, c)
	}
	if len(told) != 1 || told[0] != fence.NameDoubleWriter {
		t.Errorf("first was told %v, want [%s]", told, fence.NameDoubleWriter)
	}
	if !Online(fence.NameDoubleWriter) || Online("integrity") {
		t.Errorf("Online: double-writer %v, integrity %v; want true, false", Online(fence.NameDoubleWriter), Online("integrity"))
	}
	// A workload without the double-writer has no online check.
	if st, _ := NewTracker().Status(); st.Online != nil {
		t.Errorf("online = %v before Follow", st.Online)
	}
}

// TestTrackerFollowStops: a damaged log stops the online check, says so
// on the line, and is an error.
func TestTrackerFollowStops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "register.jsonl")
	if err := os.WriteFile(path, []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := started()
	err := tr.Follow(context.Background(), path, []string{fence.NameDoubleWriter}, slog.New(slog.DiscardHandler), nil)
	st, _ := tr.Status()
	if err == nil || len(st.Online) != 1 || st.Online[0].Stopped == "" || !strings.Contains(st.String(), "double-writer stopped") {
		t.Errorf("err %v, status %q", err, st)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// BenchmarkFollow is the online check's cost per apply-log entry: read,
// decode, judge (a clean log of the lock workload's shape).
func BenchmarkFollow(b *testing.B) {
	const n = 100_000
	path := filepath.Join(b.TempDir(), "register.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	for i := range int64(n) {
		key := "SKU-" + string(rune('1'+i%8))
		e := register.Entry{Seq: i + 1, Wall: time.Now().UnixNano(), Op: register.OpWrite, Key: key, Token: 4294967296 + i,
			HasToken: true, Value: i/8 + 1, Process: int(i % 10), PID: 4000 + int(i%10), Accepted: true,
			PrevValue: i / 8, PrevToken: 4294967296 + i - 8, PrevFence: 4294967296 + i - 8, Mode: register.ModeOn}
		line, _ := json.Marshal(e)
		f.Write(append(line, '\n'))
	}
	f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one pass over what is there
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		tr := started()
		if err := tr.Follow(ctx, path, []string{fence.NameDoubleWriter}, slog.New(slog.DiscardHandler), nil); err != nil {
			b.Fatal(err)
		}
		if st, _ := tr.Status(); st.Online[0].Violations != 0 {
			b.Fatalf("violations in a clean log: %v", st.Online)
		}
	}
	// CPU time, not wall time: on a shared machine the wall time counts
	// the waits for a core.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n), "cpu-ns/entry")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// started is a tracker of a run that has entered its setup phase.
func started() *Tracker {
	tr := NewTracker()
	tr.Phase("setup")
	return tr
}

// TestTrackerSilentBeforeTheRun: a run refused for bad input never
// enters a phase, and nothing may be shown before its error.
func TestTrackerSilentBeforeTheRun(t *testing.T) {
	tr := NewTracker()
	if st, ok := tr.Status(); ok {
		t.Errorf("a tracker shows %q before the run entered a phase", st)
	}
	tr.Phase("setup")
	if _, ok := tr.Status(); !ok {
		t.Error("a tracker in setup shows nothing")
	}
}

// TestSummarize: a summary line every interval, and one at once when an
// online checker finds its first violation (not again for its next ones).
func TestSummarize(t *testing.T) {
	tr := NewTracker()
	tr.Workload(time.Hour)
	tr.Observe(history.Event{Type: history.OK, F: "acquire", Process: 1})
	tr.mu.Lock()
	tr.online = []Count{{Name: "double-writer"}}
	tr.mu.Unlock()
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Summarize(ctx, log, 400*time.Millisecond, func() uint64 { return 3 << 20 })
	}()
	time.Sleep(600 * time.Millisecond)
	tr.mu.Lock()
	tr.online[0].Violations = 2
	tr.mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	tr.mu.Lock()
	tr.online[0].Violations = 3
	tr.mu.Unlock()
	time.Sleep(200 * time.Millisecond)
	cancel()
	<-done
	out := buf.String()
	if n := strings.Count(out, "why=interval"); n < 1 || n > 3 {
		t.Errorf("%d interval lines in 1.1 s at 400 ms:\n%s", n, out)
	}
	if n := strings.Count(out, "why=violation"); n != 1 {
		t.Errorf("%d violation lines, want 1:\n%s", n, out)
	}
	for _, want := range []string{"ops=1 ok=1", "violations=2", "controller_rss_mib=3.0", "why=end"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestCountsByOperationAndFaults: completions are counted by operation,
// and a fault is counted when its start did something (not when it
// failed).
func TestCountsByOperationAndFaults(t *testing.T) {
	tr := NewTracker()
	tr.Phase("workload")
	start := history.Faults[0].Start
	for _, e := range []history.Event{
		{Type: history.OK, F: "acquire", Process: 1}, {Type: history.Fail, F: "acquire", Process: 2},
		{Type: history.Info, F: "write", Process: 1}, {Type: history.Invoke, F: "write", Process: 1},
		{Type: history.Invoke, F: start, Process: history.Nemesis}, {Type: history.OK, F: start, Process: history.Nemesis},
		{Type: history.Invoke, F: start, Process: history.Nemesis}, {Type: history.Fail, F: start, Process: history.Nemesis},
	} {
		tr.Observe(e)
	}
	st, _ := tr.Status()
	want := []OpCount{{F: "acquire", OK: 1, Fail: 1}, {F: "write", Info: 1}}
	if st.Faults != 1 || len(st.Ops) != 2 || st.Ops[0] != want[0] || st.Ops[1] != want[1] {
		t.Errorf("faults %d, ops %+v; want 1 and %+v", st.Faults, st.Ops, want)
	}
}
