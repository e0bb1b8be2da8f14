package progress

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/zkchaos/zkchaos/internal/setting"
)

// Mode is how the status is shown: --progress.
type Mode string

// The modes of --progress.
const (
	// Auto is Terminal when stderr is a terminal, else Line.
	Auto Mode = "auto"
	// Terminal is one line redrawn in place.
	Terminal Mode = "terminal"
	// Line is a plain line every LinePeriod.
	Line Mode = "line"
	// Off shows nothing.
	Off Mode = "off"
)

// Periods of the modes: a redraw four times a second on a terminal; in a
// CI log, a line every five seconds is enough to see a run is alive and
// how it goes, without burying the log.
const (
	RedrawPeriod = 250 * time.Millisecond
	LinePeriod   = 5 * time.Second
)

// ParseMode reads a --progress value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, Line, Off:
		return m, nil
	}
	return "", fmt.Errorf("%s %q: want auto, line or off", setting.Name("Progress"), s)
}

// Resolve turns Auto into Terminal or Line for out.
func (m Mode) Resolve(out *os.File) Mode {
	if m != Auto {
		return m
	}
	if term.IsTerminal(int(out.Fd())) {
		return Terminal
	}
	return Line
}

// Display shows a status on an output until Stop. On a terminal the
// status is one line redrawn in place (\r, the line, erase to its end),
// cut to the terminal's width so it never wraps; anything else written to
// that terminal while it is shown must go through Bypass, which takes the
// line away, writes, and draws it again under what was written.
type Display struct {
	mode   Mode
	out    io.Writer
	fd     int // out's descriptor, for its width; -1 when not a terminal
	period time.Duration
	src    func() (Status, bool)
	mu     sync.Mutex
	shown  bool // the status line is on the screen
	broken bool // a bypass write ended mid-line: draw nothing until it ends
	cancel context.CancelFunc
	done   chan struct{}
}

// Start shows src's status on out in mode m (Auto resolved for out),
// until Stop. src returning false means nothing to show now.
func Start(m Mode, out *os.File, src func() (Status, bool)) *Display {
	m = m.Resolve(out)
	fd, period := -1, LinePeriod
	if m == Terminal {
		fd, period = int(out.Fd()), RedrawPeriod
	}
	return start(m, out, fd, period, src)
}

func start(m Mode, out io.Writer, fd int, period time.Duration, src func() (Status, bool)) *Display {
	ctx, cancel := context.WithCancel(context.Background())
	d := &Display{mode: m, out: out, fd: fd, period: period, src: src, cancel: cancel, done: make(chan struct{})}
	if m == Off {
		close(d.done)
		return d
	}
	go d.loop(ctx)
	return d
}

func (d *Display) loop(ctx context.Context) {
	defer close(d.done)
	t := time.NewTicker(d.period)
	defer t.Stop()
	for {
		if d.mode == Terminal {
			d.redraw()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if d.mode != Terminal {
			d.emit()
		}
	}
}

// redraw puts the status line on the terminal.
func (d *Display) redraw() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.draw()
}

// draw writes the status as it is now in place (d.mu held).
func (d *Display) draw() {
	if d.broken {
		return
	}
	st, ok := d.src()
	if !ok {
		d.clear()
		return
	}
	w := 0
	if d.fd >= 0 {
		w, _, _ = term.GetSize(d.fd)
	}
	fmt.Fprintf(d.out, "\r%s\x1b[K", cut(st.String(), w))
	d.shown = true
}

// clear takes the line away (d.mu held).
func (d *Display) clear() {
	if d.shown {
		io.WriteString(d.out, "\r\x1b[K")
		d.shown = false
	}
}

// emit writes the status as one plain line.
func (d *Display) emit() {
	st, ok := d.src()
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "progress: %s\n", st)
}

// Bypass is w for writes that share the status line's terminal (the
// run's log on stderr, test-all's table on stdout): each write first
// takes the line away and then draws the status as it is now below. Off a terminal it
// only keeps writes from splitting a status line.
func (d *Display) Bypass(w io.Writer) io.Writer {
	if d.mode == Off {
		return w
	}
	return bypass{d, w}
}

type bypass struct {
	d *Display
	w io.Writer
}

func (b bypass) Write(p []byte) (int, error) {
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mode != Terminal {
		return b.w.Write(p)
	}
	d.clear()
	n, err := b.w.Write(p)
	d.broken = len(p) > 0 && p[len(p)-1] != '\n'
	d.draw()
	return n, err
}

// Stop ends the display: on a terminal it takes the line away, so what
// is printed next starts on a clean line; plain lines end with one last
// line, the final counts.
func (d *Display) Stop() {
	d.cancel()
	<-d.done
	if d.mode == Line {
		d.emit()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
}

// cut shortens s to fit w columns without wrapping (w <= 0: unknown,
// uncut). The line is ASCII but for names, so a rune is a column.
func cut(s string, w int) string {
	r := []rune(s)
	if w <= 1 || len(r) < w {
		return s
	}
	return string(r[:w-2]) + "…"
}

// Emit writes the status as a JSON line to w every RedrawPeriod until ctx
// ends: a `chaos run` started by `chaos test-all` reports to its parent,
// which shows it (see ReadStatuses).
func Emit(ctx context.Context, w io.Writer, src func() (Status, bool)) {
	t := time.NewTicker(RedrawPeriod)
	defer t.Stop()
	enc := json.NewEncoder(w)
	for {
		if st, ok := src(); ok {
			if enc.Encode(st) != nil {
				return // the parent is gone: nothing to report to
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
