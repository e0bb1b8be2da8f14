package progress

import (
	"testing"

	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// TestHistoryFeedsForgetRetiredHolders: the online grant-overlap and
// wrong-token take a process whose operation answered info as retired
// (a run's runner never lets it invoke again), so its open grant stops
// pinning memory. Shown on a history that breaks the guarantee: the
// retired holder goes on under its grant, which the streams no longer
// know, so they find nothing (the batch, assuming nothing, would).
func TestHistoryFeedsForgetRetiredHolders(t *testing.T) {
	tok := func(n int64) *history.Value { return &history.Value{Token: history.Int64(n)} }
	var h []history.Event
	ev := func(p history.Process, typ history.Type, f string, v *history.Value) {
		h = append(h, history.Event{Index: int64(len(h)), Time: int64(len(h)+1) * 10, Process: p, Type: typ, F: f, Key: "K", Value: v})
	}
	ev(0, history.Invoke, history.FAcquire, nil)
	ev(0, history.OK, history.FAcquire, tok(1))
	ev(0, history.Invoke, history.FWrite, nil)
	ev(0, history.Info, history.FWrite, nil) // retired, holding K
	// What a run never records: the retired process acts again.
	ev(0, history.Invoke, history.FWrite, nil)
	ev(0, history.Fail, history.FWrite, &history.Value{Token: history.Int64(1), Current: history.Int64(3)})
	ev(1, history.Invoke, history.FAcquire, nil)
	ev(1, history.OK, history.FAcquire, tok(2))
	ev(0, history.Invoke, history.FRelease, nil)
	ev(0, history.OK, history.FRelease, nil)
	ev(1, history.Invoke, history.FRead, nil)
	for _, s := range historyFeeds([]string{lock.NameGrantOverlap, fence.NameWrongToken}, register.ModeOn) {
		p := lockview.NewPairer()
		var found int
		for _, e := range h {
			it := p.Add(e)
			found += len(s.Add(&it))
		}
		found += len(s.Finish())
		if found != 0 {
			t.Errorf("%s found %d violations under a retired holder's grant: it still follows retired holders", s.Name(), found)
		}
	}
}
