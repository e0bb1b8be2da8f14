package progress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/checker/stream"
	"github.com/zkchaos/zkchaos/history"
)

// errHistoryBehind stops the online checks of the history when they fell
// a whole queue behind the recorder.
var errHistoryBehind = errors.New("the online checks of the history fell behind (queue full): stopped")

// followHistory feeds the recorded events (queued by the recorder, in
// history order) to the history's online checks, counted from Count
// index base on, until ctx ends; then it feeds what is still queued and
// tells the checks the history is over, so their counts at the end are
// the rules' for everything recorded.
func (t *Tracker) followHistory(ctx context.Context, hist []historyStream, base int, log *slog.Logger, first func(string)) error {
	if len(hist) == 0 {
		return nil
	}
	p := lockview.NewPairer()
	var it lockview.Item // one for all: a stream reads an item only during its Add
	add := func(e history.Event) {
		it = p.Add(e)
		for i, h := range hist {
			t.report(base+i, h.Add(&it), log, first)
		}
	}
	for {
		if t.histState.Load() == histFull {
			t.stopped(base, base+len(hist), errHistoryBehind)
			return fmt.Errorf("online checks: %w", errHistoryBehind)
		}
		select {
		case e := <-t.hist:
			add(e)
			continue
		case <-ctx.Done():
		}
		for drained := false; !drained; {
			select {
			case e := <-t.hist:
				add(e)
			default:
				drained = true
			}
		}
		t.histState.Store(histOff)
		for i, h := range hist {
			// Counted, not a reason to stop anything: the run is over.
			t.report(base+i, h.Finish(), log, nil)
		}
		return nil
	}
}

// report counts what a history check found, logging the first with how
// long after it happened (run clock) it was found.
func (t *Tracker) report(i int, found []stream.Found, log *slog.Logger, first func(string)) {
	if len(found) == 0 {
		return
	}
	f := found[0]
	t.mu.Lock()
	rec := t.rec
	t.mu.Unlock()
	attrs := []any{"violation", f.Message, "key", f.Key}
	if rec != nil {
		attrs = append(attrs, "after", time.Duration(rec.Since()-f.TimeNS).Round(time.Millisecond).String())
	}
	t.found(i, len(found), log, first, attrs...)
}
