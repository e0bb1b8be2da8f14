package plots

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// ev is an event at ms.
func ev(ms int64, p history.Process, typ history.Type, f string) history.Event {
	return history.Event{Time: ms * 1e6, Process: p, Type: typ, F: f, Key: "SKU-1"}
}

// sample: ok, fail and info operations, one never completed, and a pause
// of the nemesis from 100 to 400 ms.
func sample() []history.Event {
	return []history.Event{
		ev(0, 0, history.Invoke, history.FAcquire), ev(5, 0, history.OK, history.FAcquire),
		ev(10, 1, history.Invoke, history.FAcquire), ev(10, 1, history.Fail, history.FAcquire), // same ns: clamped
		ev(20, 0, history.Invoke, history.FWrite), ev(30, 0, history.OK, history.FWrite),
		{Time: 100e6, Process: history.Nemesis, Type: history.Invoke, F: history.FPause, Value: &history.Value{Target: "pause-holder"}},
		{Time: 101e6, Process: history.Nemesis, Type: history.OK, F: history.FPause, Value: &history.Value{Target: "process 0", PID: 7}},
		ev(150, 2, history.Invoke, history.FAcquire), ev(350, 2, history.Info, history.FAcquire),
		ev(360, 3, history.Invoke, history.FRelease),
		{Time: 399e6, Process: history.Nemesis, Type: history.Invoke, F: history.FResume, Value: &history.Value{PID: 7}},
		{Time: 400e6, Process: history.Nemesis, Type: history.OK, F: history.FResume, Value: &history.Value{PID: 7}},
		ev(500, 0, history.Invoke, history.FRelease), ev(505, 0, history.OK, history.FRelease),
	}
}

// drawn draws a figure of h: an inline SVG, well-formed XML (so it
// inlines into HTML as it is), with a caption.
func drawn(t *testing.T, fig func(lockview.View) (Figure, error), h []history.Event) Figure {
	t.Helper()
	f, err := fig(lockview.Of(h))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(f.SVG, []byte("<svg")) || f.Caption == "" {
		t.Fatalf("not an inline SVG with a caption: %.80q, caption %q", f.SVG, f.Caption)
	}
	d := xml.NewDecoder(bytes.NewReader(f.SVG))
	for {
		if _, err := d.Token(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("SVG is not well-formed: %v", err)
			}
			break
		}
	}
	return f
}

func TestLatency(t *testing.T) {
	f := drawn(t, Latency, sample())
	s := string(f.SVG)
	for _, want := range []string{"ok (3)", "fail (1)", "info (1)", ">pause<", "log scale"} {
		if !strings.Contains(s, want) {
			t.Errorf("the figure lacks %q", want)
		}
	}
	for _, want := range []string{"5 completions, one point each", "1 operation never completed"} {
		if !strings.Contains(f.Caption, want) {
			t.Errorf("the caption %q lacks %q", f.Caption, want)
		}
	}
	if strings.Contains(s, ">resume<") {
		t.Error("a fault's stop drawn as a fault of its own")
	}
}

func TestLatencyNothingToDraw(t *testing.T) {
	h := []history.Event{ev(0, 0, history.Invoke, history.FAcquire)}
	if _, err := Latency(lockview.Of(h)); !errors.Is(err, ErrNothingToDraw) {
		t.Fatalf("a history without completions: %v", err)
	}
}

// TestLatencyEscapesLabels: a fault verb is text from the history (which
// may come from anyone's worker or file); it must not become markup in
// the page the SVG is inlined into.
func TestLatencyEscapesLabels(t *testing.T) {
	h := sample()
	h[6].F, h[7].F = "<script>x</script>", "<script>x</script>"
	s := string(drawn(t, Latency, h).SVG)
	if strings.Contains(s, "<script>") || !strings.Contains(s, "&lt;script&gt;") {
		t.Fatalf("the label is not escaped text: %q", s[strings.Index(s, "script")-20:][:60])
	}
}

func TestThroughput(t *testing.T) {
	s := string(drawn(t, Throughput, sample()).SVG)
	for _, want := range []string{">acquire<", ">write<", ">release<", ">pause<", "completions / s"} {
		if !strings.Contains(s, want) {
			t.Errorf("the throughput figure lacks %q", want)
		}
	}
}

func TestEvents(t *testing.T) {
	if _, err := Events(lockview.Of(sample())); !errors.Is(err, ErrNothingToDraw) {
		t.Fatalf("a history without session events or refusals: %v", err)
	}
	s := string(drawn(t, Events, eventsSample()).SVG)
	// Each row's label is its short name over its count (two lines).
	for _, want := range []string{">disconnected<", ">expired<", ">lost / demoted<", ">refused<", ">(1)<", ">pause<"} {
		if !strings.Contains(s, want) {
			t.Errorf("the event strip lacks %q", want)
		}
	}
}

// eventsSample is sample with one event of each row of the event strip.
func eventsSample() []history.Event {
	h := sample()
	instant := func(ms int64, f, state string) []history.Event {
		e := history.Event{Time: ms * 1e6, Process: 0, F: f, Value: &history.Value{State: state}}
		inv := e
		inv.Type, e.Type = history.Invoke, history.OK
		return []history.Event{inv, e}
	}
	h = append(h, instant(120, history.FSession, "disconnected")...)
	h = append(h, instant(130, history.FSession, "expired")...)
	h = append(h, instant(131, history.FLost, "expired")...)
	h = append(h, ev(600, 0, history.Invoke, history.FWrite))
	rej := ev(601, 0, history.Fail, history.FWrite)
	rej.Error = "rejected: token 5 below fence 6"
	return append(h, rej)
}

func TestWaitHold(t *testing.T) {
	s := string(drawn(t, WaitHold, sample()).SVG)
	for _, want := range []string{"wait p50", "wait p99", "hold p50", "hold p99", ">pause<"} {
		if !strings.Contains(s, want) {
			t.Errorf("the wait/hold figure lacks %q", want)
		}
	}
	// Process 0 waited 5 ms (bin 0) and held 495 ms (released at 500 ms).
	w := make([][]int64, 1)
	hd := make([][]int64, 1)
	collectWaitHold(lockview.Of(sample()).Ops, history.FAcquire, history.FRelease, 1e9, w, hd)
	if len(w[0]) != 1 || w[0][0] != 5e6 || len(hd[0]) != 1 || hd[0][0] != 495e6 {
		t.Fatalf("waits %v, holds %v", w, hd)
	}
	if q := quantiles([][]int64{{4e6, 1e6, 3e6, 2e6}, nil}, 0.5, 1e9); len(q) != 1 || q[0].Y != 2 || q[0].X != 0.5 {
		t.Fatalf("median of 1..4: %v", q)
	}
	if _, err := WaitHold(lockview.Of([]history.Event{ev(0, 0, history.Invoke, history.FAcquire)})); !errors.Is(err, ErrNothingToDraw) {
		t.Fatalf("no ok acquire: %v", err)
	}
}
