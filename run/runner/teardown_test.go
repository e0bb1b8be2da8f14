package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
)

// TestTeardownJudgesEachError: a cancelled context is excused only during
// a hard stop, and never hides another failure joined with it (a failed
// namespace removal used to be dropped whenever any error mentioned
// "context canceled").
func TestTeardownJudgesEachError(t *testing.T) {
	cancelled := fmt.Errorf("stop ensemble: %w", context.Canceled)
	netErr := errors.New("remove run network: ip netns del zkc3-w1: Device or resource busy")
	hardStopped, stop := context.WithCancel(context.Background())
	stop()
	cases := []struct {
		hard context.Context
		errs []error
		want string // "" for no failure
	}{
		{hardStopped, []error{cancelled}, ""},
		{hardStopped, []error{cancelled, netErr}, "ip netns del"},
		{context.Background(), []error{cancelled}, "context canceled"},
		{context.Background(), []error{netErr}, "ip netns del"},
		{context.Background(), nil, ""},
	}
	for i, tc := range cases {
		err := newTeardown(testState(t, tc.hard), nil).failures(tc.errs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("case %d: %v judged a failure", i, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("case %d: got %v, want a failure naming %q", i, err, tc.want)
		}
	}
}

// finishes counts the janitor's Finish calls and fails them with err.
type finishes struct {
	n   int
	err error
}

func (f *finishes) Finish(time.Duration) error { f.n++; return f.err }

// TestTeardownRunsOnce: the parts go once however often teardown is
// called; the history is closed, status.json says the run is done, and a
// janitor that cannot be told is a harness failure.
func TestTeardownRunsOnce(t *testing.T) {
	run, err := store.Create(t.TempDir(), "teardown", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, cancel := newRunState(context.Background(), run, testlog.Logger(t), nil, store.Status{})
	defer cancel()
	hist, err := history.Create(run.Path(store.HistoryFile), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	jan := &finishes{err: errors.New("janitor gone")}
	td := newTeardown(st, jan)
	td.hist = hist
	td.run()
	td.run()
	select {
	case <-td.started:
	default:
		t.Error("started not closed")
	}
	if jan.n != 1 {
		t.Errorf("janitor finished %d times", jan.n)
	}
	if _, err := hist.Append(history.Event{Process: history.Nemesis, Type: history.Invoke, F: "pause"}); err == nil {
		t.Error("history still open after teardown")
	}
	s, err := store.ReadStatus(run.Path(store.StatusFile))
	if err != nil || s.Phase != store.PhaseDone || s.StoppedBecause != "harness failure during setup or workload" {
		t.Errorf("status %+v, %v", s, err)
	}
	if err := st.harnessError(); err == nil || !strings.Contains(err.Error(), "teardown: janitor gone") {
		t.Errorf("harness error %v", err)
	}
}
