package progress

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// screen is what a terminal shows after the bytes written to it: enough
// of a terminal for \r, \n and "erase to the end of the line".
func screen(out string) []string {
	lines := []string{""}
	col := 0
	for i := 0; i < len(out); i++ {
		cur := &lines[len(lines)-1]
		switch {
		case out[i] == '\r':
			col = 0
		case out[i] == '\n':
			lines = append(lines, "")
			col = 0
		case strings.HasPrefix(out[i:], "\x1b[K"):
			*cur = (*cur)[:col]
			i += 2
		default:
			if col < len(*cur) {
				*cur = (*cur)[:col] + string(out[i]) + (*cur)[col+1:]
			} else {
				*cur += string(out[i])
			}
			col++
		}
	}
	return lines
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTerminalLine: the line is redrawn in place, log lines written
// through Bypass appear above it whole, and Stop leaves only the log.
func TestTerminalLine(t *testing.T) {
	var out lockedBuffer
	var mu sync.Mutex
	n := 0
	src := func() (Status, bool) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return Status{Phase: "workload", Elapsed: time.Duration(n) * time.Second, Limit: time.Minute, OK: n, Target: -1}, true
	}
	d := start(Terminal, &out, -1, time.Millisecond, src)
	waitUntil(t, func() bool { return strings.Count(out.String(), "\r") > 5 })
	logw := d.Bypass(&out)
	for i := range 20 {
		io.WriteString(logw, "level=INFO msg=\"log line\" i="+string(rune('a'+i))+"\n")
		time.Sleep(time.Millisecond)
	}
	sc := screen(out.String())
	if last := sc[len(sc)-1]; !strings.HasPrefix(last, "elapsed ") {
		t.Errorf("while running, the last line is %q, want the status", last)
	}
	for _, l := range sc[:len(sc)-1] {
		if !strings.HasPrefix(l, "level=INFO") || strings.Contains(l, "elapsed") {
			t.Errorf("a log line mixed with the status: %q", l)
		}
	}
	if len(sc) != 21 {
		t.Errorf("%d lines on the screen, want 20 log lines and the status", len(sc))
	}
	d.Stop()
	sc = screen(out.String())
	if len(sc) != 21 || sc[20] != "" {
		t.Errorf("after Stop the last line is %q, want it cleared", sc[len(sc)-1])
	}
}

// TestTerminalPartialWrite: a write through Bypass that ends mid-line is
// not overdrawn: the line comes back once the log line is complete.
func TestTerminalPartialWrite(t *testing.T) {
	var out lockedBuffer
	d := start(Terminal, &out, -1, time.Millisecond, func() (Status, bool) { return Status{Phase: "workload", Target: -1}, true })
	w := d.Bypass(&out)
	io.WriteString(w, "half a ")
	time.Sleep(20 * time.Millisecond)
	io.WriteString(w, "line\n")
	time.Sleep(20 * time.Millisecond)
	d.Stop()
	if sc := screen(out.String()); sc[0] != "half a line" {
		t.Errorf("screen %q", sc)
	}
}

// TestPlainLines: off a terminal, a plain line per period, and log lines
// pass through untouched.
func TestPlainLines(t *testing.T) {
	var out lockedBuffer
	d := start(Line, &out, -1, 5*time.Millisecond, func() (Status, bool) { return Status{Phase: "setup", Target: -1}, true })
	waitUntil(t, func() bool { return strings.Count(out.String(), "\n") >= 3 })
	io.WriteString(d.Bypass(&out), "log\n")
	d.Stop()
	s := out.String()
	if !strings.HasSuffix(s, "log\nprogress: setup 0s  ops ok 0 fail 0 info 0  fault none\n") {
		t.Errorf("no last line at the end: %q", s)
	}
	if strings.ContainsAny(s, "\r\x1b") {
		t.Errorf("control characters off a terminal: %q", s)
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if l != "log" && l != "progress: setup 0s  ops ok 0 fail 0 info 0  fault none" {
			t.Errorf("line %q", l)
		}
	}
}

// TestOff: nothing is written, and Bypass is the writer itself.
func TestOff(t *testing.T) {
	var out bytes.Buffer
	d := start(Off, &out, -1, time.Millisecond, func() (Status, bool) { t.Error("src asked"); return Status{}, false })
	if d.Bypass(&out) != io.Writer(&out) {
		t.Error("Bypass wraps the writer when off")
	}
	time.Sleep(10 * time.Millisecond)
	d.Stop()
	if out.Len() != 0 {
		t.Errorf("wrote %q", out.String())
	}
}

func TestCut(t *testing.T) {
	if got := cut("abcdef", 5); got != "abc…" {
		t.Errorf("cut = %q", got)
	}
	if got := cut("abcdef", 0); got != "abcdef" {
		t.Errorf("unknown width: %q", got)
	}
	if got := cut("abcd", 5); got != "abcd" {
		t.Errorf("fits: %q", got)
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"auto", "line", "off"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("%s: %v %v", s, m, err)
		}
	}
	if _, err := ParseMode("terminal"); err == nil || !strings.HasPrefix(err.Error(), "progress \"terminal\"") {
		t.Errorf("terminal: %v", err)
	}
}

// TestEmitRead: the JSON lines a run emits are the statuses its parent
// reads.
func TestEmitRead(t *testing.T) {
	r, w := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	want := Status{Phase: "workload", Elapsed: 3 * time.Second, OK: 7, Fault: "kill-zk", Target: -1,
		Online: []Count{{Name: "double-writer", Violations: 2}}}
	go func() { Emit(ctx, w, func() (Status, bool) { return want, true }); w.Close() }()
	var got []Status
	done := make(chan struct{})
	go func() {
		ReadStatuses(r, func(s Status) {
			got = append(got, s)
			cancel()
		})
		close(done)
	}()
	<-done
	if len(got) == 0 || got[0].String() != want.String() {
		t.Errorf("got %v, want %v", got, want)
	}
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBypassDrawsNow: after a write through Bypass the line shows the
// status as it is then: a cell that ended leaves no line under the row
// that reports it.
func TestBypassDrawsNow(t *testing.T) {
	var out lockedBuffer
	var cell Latest
	cell.Set(Status{Prefix: "cell 1/2 x", Phase: "teardown", Target: -1})
	d := start(Terminal, &out, -1, time.Hour, cell.Get) // draws once, at the start
	waitUntil(t, func() bool { return strings.Contains(out.String(), "cell 1/2 x") })
	cell.Clear()
	io.WriteString(d.Bypass(&out), "x  pass\n")
	if sc := screen(out.String()); len(sc) != 2 || sc[0] != "x  pass" || sc[1] != "" {
		t.Errorf("screen %q, want the row and no line under it", sc)
	}
	d.Stop()
}
