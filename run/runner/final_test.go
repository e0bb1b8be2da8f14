package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/fakeworker"
	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
	"github.com/zkchaos/zkchaos/workloads"
)

// TestFinalPhase: with nothing left to undo the restore is recorded as
// the nemesis's verified operation; after the recovery every client reads
// every key from the real register, token-less, and status.json says the
// final phase is done.
func TestFinalPhase(t *testing.T) {
	dir := t.TempDir()
	reg, err := startRegister(context.Background(), placement{}, os.Args[0], []string{envRegister + "=1"}, runSecrets{register: "s"},
		filepath.Join(dir, "apply.log"), filepath.Join(dir, "register.log"), "on", "on")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.stop(5 * time.Second)
	hist := history.NewMemory()
	tf := newTestFleet(t, fakeworker.Script{}, hist, func(c *Config) { c.Workers = 2 })
	log := testlog.Logger(t)
	st, cancel := newRunState(context.Background(), tf.run, log, nil, store.Status{})
	defer cancel()
	keys := []string{"SKU-1", "SKU-2"}
	p := &finalPhase{st: st, runID: "test-runner-final-none", fleet: tf.fleet, svc: &services{reg: reg, log: log},
		wl: &workloads.Lock{Keys: keys, Root: "/locks"}, rec: hist, nemHist: hist, recovery: 10 * time.Millisecond}
	p.run(store.StopTimeLimit)

	var restored bool
	reads := map[history.Process]int{}
	for _, e := range hist.Events() {
		switch {
		case e.F == history.FRestore && e.Type == history.OK:
			restored = e.Process == history.Nemesis && e.Value != nil && e.Value.Verified != nil && *e.Value.Verified &&
				e.Value.Detail == "nothing left to undo"
		case e.F == history.FFinalRead && e.Type == history.OK:
			reads[e.Process]++
		case e.F == history.FFinalRead && e.Type != history.Invoke:
			t.Errorf("final read not ok: %+v", e)
		}
	}
	if !restored {
		t.Errorf("no verified restore with nothing to undo in %+v", hist.Events())
	}
	if reads[0] != len(keys) || reads[1] != len(keys) {
		t.Errorf("final reads by process: %v, want %d each of 0 and 1", reads, len(keys))
	}
	s, err := store.ReadStatus(tf.run.Path(store.StatusFile))
	if err != nil || !s.FinalPhase {
		t.Errorf("status after the final phase: %+v, %v", s, err)
	}
}

// TestFinalPhaseAborted: an aborted run heals but reads nothing finally.
func TestFinalPhaseAborted(t *testing.T) {
	hist := history.NewMemory()
	tf := newTestFleet(t, fakeworker.Script{}, hist, nil)
	st, cancel := newRunState(context.Background(), tf.run, testlog.Logger(t), nil, store.Status{})
	defer cancel()
	st.abort(os.ErrClosed)
	p := &finalPhase{st: st, runID: "test-runner-final-aborted", fleet: tf.fleet, svc: &services{log: st.log},
		wl: &workloads.Lock{Keys: []string{"SKU-1"}, Root: "/locks"}, rec: hist, nemHist: hist}
	p.run("harness failure")
	for _, e := range hist.Events() {
		if e.F != history.FRestore {
			t.Errorf("an aborted run recorded %+v", e)
		}
	}
	if len(hist.Events()) != 2 {
		t.Errorf("restore not recorded: %+v", hist.Events())
	}
}

// TestSettleWaitsForRetired: the recovery wait lasts while a retired
// process may still act out the operation the history closed as info:
// it ends only once that process has answered late and exited, with its
// late answer recorded; it is bounded by the recovery time when the
// process never answers; and with no retired process it ends at once,
// not after the recovery time.
func TestSettleWaitsForRetired(t *testing.T) {
	settle := func(tf *testFleet, recovery time.Duration) time.Duration {
		st, cancel := newRunState(context.Background(), tf.run, testlog.Logger(t), nil, store.Status{})
		defer cancel()
		p := &finalPhase{st: st, fleet: tf.fleet, recovery: recovery}
		start := time.Now()
		p.settle()
		return time.Since(start)
	}
	late := func(delay time.Duration) (*testFleet, *live, *history.Memory) {
		mem := history.NewMemory()
		tf := newTestFleet(t, fakeworker.Script{DelayMS: map[string]int64{"acquire": delay.Milliseconds()}, DelayOnce: true},
			mem, func(c *Config) { c.Workers = 2; c.OpTimeout = 50 * time.Millisecond })
		tf.start(t, 1)
		s := tf.start(t, 0)
		l := s.cur
		op := acquire("SKU-1")
		op.Timeout = 0
		if r := s.Do(context.Background(), op); r.Type != history.Info {
			t.Fatalf("acquire past its timeout: %+v", r)
		}
		return tf, l, mem
	}

	tf, l, mem := late(time.Second)
	took := settle(tf, 30*time.Second)
	select {
	case <-l.p.Done():
	default:
		t.Fatalf("settle returned after %s with the retired process still alive", took)
	}
	if !slices.ContainsFunc(mem.Events(), func(e history.Event) bool { return e.F == history.FLate }) {
		t.Error("settle returned before the retired process's late answer was recorded")
	}
	if took >= 30*time.Second {
		t.Errorf("settle took the whole recovery time (%s) though the retired process exited", took)
	}

	tf, l, _ = late(time.Minute)
	if took := settle(tf, 300*time.Millisecond); took < 300*time.Millisecond || took > 10*time.Second {
		t.Errorf("with a retired process that never answers, settle took %s; want the recovery time, 300ms", took)
	}
	_ = l.p.Kill()

	quiet := newTestFleet(t, fakeworker.Script{}, history.NewMemory(), func(c *Config) { c.Workers = 2 })
	quiet.start(t, 0)
	quiet.start(t, 1)
	if took := settle(quiet, 30*time.Second); took >= 30*time.Second {
		t.Errorf("with no retired process, settle took %s, the whole recovery time", took)
	}
}
