package worker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/fakeworker"
	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
)

// The handle's own tests: the test binary re-executed as a scripted fake
// worker (internal/testkit/fakeworker), real pipes, no ZooKeeper; they run with
// -short too.

func startFake(t *testing.T, s fakeworker.Script, h Handler, opts Options) *Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeworker.Env+"="+s.Encode())
	opts.Handler = h
	if opts.Log == nil {
		opts.Log = testlog.Writer(t)
		opts.LogHead, opts.LogTail = 1<<20, 1<<20
	}
	p := New(cmd, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Kill()
		<-p.Done()
	})
	return p
}

func waitDone(t *testing.T, p *Proc, why string) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("worker still running 10s after %s", why)
	}
}

// TestLinesHandledInOrder: the fake writes a lost event and the release
// answer in one write; the handler must see the lost event first, every
// time, and Do must return only after the release's completion was
// handled.
func TestLinesHandledInOrder(t *testing.T) {
	in := newInbox()
	p := startFake(t, fakeworker.Script{LostBeforeRelease: true}, in, Options{})
	const n = 300
	for i := 0; i < n; i++ {
		if m, err := p.Do(context.Background(), Request{F: "acquire", Key: "k", TimeoutMS: 1000}); err != nil || m.Type != OK {
			t.Fatalf("acquire: %+v %v", m, err)
		}
		if m, err := p.Do(context.Background(), Request{F: "release", Key: "k"}); err != nil || m.Type != OK {
			t.Fatalf("release: %+v %v", m, err)
		}
		notes := in.notes()
		if last := notes[len(notes)-1]; last != "complete release ok" {
			t.Fatalf("round %d: Do returned before its completion was handled; last handled: %q", i, last)
		}
		if prev := notes[len(notes)-2]; prev != "event lost k" {
			t.Fatalf("round %d: before the release answer the handler saw %q, want the lost event written before it", i, prev)
		}
		<-in.events
	}
}

// slowInbox is an inbox whose recording of a completion without an answer
// takes a while, as a history append on a busy disk may: the window in
// which a late answer used to lose its operation name.
type slowInbox struct {
	*inbox
	delay time.Duration
}

func (s slowInbox) Complete(req Request, m Message, err error) {
	if err != nil {
		time.Sleep(s.delay)
	}
	s.inbox.Complete(req, m, err)
}

// TestLateAnswerWhileGivingUp: the answer arrives after Do gave up but
// while its info is still being recorded. It must be handled after that
// record, as a late answer that names its request, and the retired worker
// must get its stdin closed after it (it exits).
func TestLateAnswerWhileGivingUp(t *testing.T) {
	in := slowInbox{newInbox(), 400 * time.Millisecond}
	p := startFake(t, fakeworker.Script{DelayMS: map[string]int64{"acquire": 150}}, in, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	m, err := p.Do(ctx, Request{F: "acquire", Key: "SKU-2", TimeoutMS: 1000})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || m.ID == 0 {
		t.Fatalf("Do past its deadline: %+v %v", m, err)
	}
	p.Retire()
	var l lateAnswer
	select {
	case l = <-in.late:
	case <-time.After(10 * time.Second):
		t.Fatal("no late answer")
	}
	if l.req.F != "acquire" || l.req.Key != "SKU-2" || l.req.ID != m.ID || l.m.Type != OK {
		t.Fatalf("late answer %+v to request %+v, want the acquire of SKU-2 id %d", l.m, l.req, m.ID)
	}
	want := []string{"event hello ", "complete acquire error", "late acquire SKU-2"}
	if got := in.notes(); !slices.Equal(got, want) {
		t.Fatalf("handled %q, want %q", got, want)
	}
	waitDone(t, p, "its late answer (retired: stdin should be closed)")
	if !p.InputClosed() {
		t.Fatal("worker exited but its input was never closed")
	}
}

// TestRetireWaitsForLateAnswer: retired while its answer is outstanding,
// the worker keeps its stdin until the answer is in, then gets it closed.
func TestRetireWaitsForLateAnswer(t *testing.T) {
	in := newInbox()
	p := startFake(t, fakeworker.Script{DelayMS: map[string]int64{"write": 500}}, in, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := p.Do(ctx, Request{F: "write", Key: "k", Value: val(3)})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do: %v", err)
	}
	p.Retire()
	if p.InputClosed() {
		t.Fatal("stdin closed while an answer is outstanding: the late answer could be lost")
	}
	if _, err := p.Do(context.Background(), Request{F: "read", Key: "k"}); !errors.Is(err, ErrRetired) {
		t.Fatalf("Do on a retired worker: %v", err)
	}
	select {
	case l := <-in.late:
		if l.req.F != "write" || l.req.Value == nil || *l.req.Value != 3 {
			t.Fatalf("late answer to %+v", l.req)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no late answer")
	}
	waitDone(t, p, "its late answer")
}

// TestRetireWithNothingPending: a worker retired with no answer owed gets
// its stdin closed at once and exits.
func TestRetireWithNothingPending(t *testing.T) {
	p := startFake(t, fakeworker.Script{}, newInbox(), Options{})
	if _, err := p.Do(context.Background(), Request{F: "acquire", Key: "k", TimeoutMS: 100}); err != nil {
		t.Fatal(err)
	}
	p.Retire()
	waitDone(t, p, "Retire with nothing pending")
}

// TestOverlongLineIsProtocolError: a 64 MiB stdout line costs the
// controller no more than the line limit, is a protocol error, ends the
// pending request with it, and every later request is refused.
func TestOverlongLineIsProtocolError(t *testing.T) {
	in := newInbox()
	const long = 64 << 20
	p := startFake(t, fakeworker.Script{LongLine: long}, in, Options{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := p.Do(context.Background(), Request{F: "acquire", Key: "k", TimeoutMS: 100})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), strconv.Itoa(long+1)+" bytes") {
		t.Fatalf("Do while the worker writes a %d-byte line: %v", long, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("reading a %d-byte line allocated %d bytes; the reader must not hold the line", long, grew)
	}
	if _, err := p.Do(context.Background(), Request{F: "release", Key: "k"}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("Do after a protocol error: %v", err)
	}
	in.mu.Lock()
	n := len(in.protoErrs)
	in.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d protocol errors reported, want 1", n)
	}
	want := []string{"event hello ", "protocol", "complete acquire error", "complete release error"}
	// The acquire's own answer follows the long line; it is then no
	// longer awaited and is a late answer.
	got := slices.DeleteFunc(in.notes(), func(s string) bool { return strings.HasPrefix(s, "late ") })
	if !slices.Equal(got, want) {
		t.Fatalf("handled %q, want %q", got, want)
	}
}

// TestLogCapped: a worker flooding its stderr with 20 MB leaves a log of
// its head and tail and a note of what was dropped between them, and
// keeps answering meanwhile.
func TestLogCapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const head, tail, flood = 64 << 10, 32 << 10, 20 << 20
	p := startFake(t, fakeworker.Script{StderrFlood: flood}, newInbox(), Options{Log: f, LogHead: head, LogTail: tail})
	if m, err := p.Do(context.Background(), Request{F: "acquire", Key: "k", TimeoutMS: 100}); err != nil || m.Type != OK {
		t.Fatalf("acquire while flooding: %+v %v", m, err)
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p, "stdin closed")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > head+tail+300 {
		t.Fatalf("log is %d bytes, cap %d+%d", len(b), head, tail)
	}
	note := regexp.MustCompile(`\[zkchaos: log capped at \d+ head \+ \d+ tail bytes: (\d+) bytes \((\d+) lines\) dropped here; the last (\d+) bytes follow\]\n`)
	mm := note.FindSubmatch(b)
	if mm == nil {
		t.Fatalf("no note of what was dropped in the log:\n%.300s", b)
	}
	dropped, _ := strconv.Atoi(string(mm[1]))
	lines, _ := strconv.Atoi(string(mm[2]))
	lineLen := len(fakeworker.FloodLine)
	written := (flood + lineLen - 1) / lineLen * lineLen
	if dropped != written-head-tail {
		t.Errorf("note says %d bytes dropped, want %d (%d written, %d kept)", dropped, written-head-tail, written, head+tail)
	}
	if lines < dropped/lineLen || lines > dropped/lineLen+1 {
		t.Errorf("note says %d lines dropped, want about %d", lines, dropped/lineLen)
	}
	if idx := note.FindIndex(b); string(b[:idx[0]]) == "" || len(b)-idx[1] != tail {
		t.Errorf("log has %d bytes before the note and %d after, want the head and %d", idx[0], len(b)-idx[1], tail)
	}
}
