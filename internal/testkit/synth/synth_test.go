package synth

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/resource/register"
)

// TestShape: the generated run has the shape of a real 60 s run of
// `chaos run --fencing off --nemesis pause-holder` (3 758 operations:
// 941 acquires, reads and writes, 935 releases; per fault one info
// write, one late write, one lost lock, a disconnected and an expired
// session; final reads of every key), and reads back through the real
// readers unchanged.
func TestShape(t *testing.T) {
	r, err := Generate(Spec{Ops: 4000, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if n := Ops(r.Events); n < 4000 || n > 4100 {
		t.Fatalf("%d operations, want about 4000", n)
	}
	count := map[string]int{}
	for _, e := range r.Events {
		if e.Type != history.Invoke {
			count[e.F+" "+string(e.Type)]++
			continue
		}
		count[e.F]++
	}
	acq, rel := count[history.FAcquire], count[history.FRelease]
	if acq < 900 || acq > 1100 || rel < acq*9/10 || count[history.FRead] != count[history.FWrite] {
		t.Errorf("acquires %d, releases %d, reads %d, writes %d", acq, rel, count[history.FRead], count[history.FWrite])
	}
	if r.Faults < 5 || r.Faults > 10 || count[history.FLate] != r.Faults || count[history.FLost] != r.Faults || count["write info"] != r.Faults {
		t.Errorf("%d faults (about 7 in 70 s), %d late, %d lost, %d info writes", r.Faults, count[history.FLate], count[history.FLost], count["write info"])
	}
	if count["acquire fail"] == 0 || count[history.FFinalRead] != 6*3 || count[history.FPause] != r.Faults || count[history.FSessionGone] != r.Faults {
		t.Errorf("failed acquires %d, final reads %d, pauses %d, session-gone %d", count["acquire fail"], count[history.FFinalRead], count[history.FPause], count[history.FSessionGone])
	}
	for i, e := range r.Events {
		if e.Index != int64(i) || (i > 0 && e.Time < r.Events[i-1].Time) {
			t.Fatalf("event %d: index %d time %d after %d: not in index and time order", i, e.Index, e.Time, r.Events[max(i-1, 0)].Time)
		}
	}

	dir := t.TempDir()
	if err := r.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	h, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil || h.Truncated || !reflect.DeepEqual(h.Events, r.Events) {
		t.Fatalf("history read back: err %v, truncated %v, equal %v", err, h.Truncated, reflect.DeepEqual(h.Events, r.Events))
	}
	log, err := register.ReadApplyLog(filepath.Join(dir, store.ApplyLogFile))
	if err != nil || !reflect.DeepEqual(log, r.ApplyLog) {
		t.Fatalf("apply log read back: err %v", err)
	}
	// The register's own replay checks every entry's Prev* fields.
	if _, err := register.ReplayAll(log); err != nil {
		t.Fatalf("the apply log does not replay: %v", err)
	}
	st, err := store.ReadStatus(filepath.Join(dir, store.StatusFile))
	if err != nil || st.Phase != store.PhaseDone || !st.FinalPhase {
		t.Fatalf("status: %+v, %v", st, err)
	}
}

// TestDoubleWrites: with fencing off every fault's late write is
// accepted after a newer holder's write (a double write); with fencing
// on it is refused as stale.
func TestDoubleWrites(t *testing.T) {
	for _, mode := range []string{register.ModeOff, register.ModeOn} {
		r, err := Generate(Spec{Ops: 2000, Fencing: mode, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		regressions, refused := 0, 0
		last := map[string]int64{}
		for _, e := range r.ApplyLog {
			if e.Op != register.OpWrite {
				continue
			}
			switch {
			case !e.Accepted:
				refused++
			case e.Token < last[e.Key]:
				regressions++
			}
			if e.Accepted {
				last[e.Key] = e.Token
			}
		}
		want := map[string][2]int{register.ModeOff: {r.Faults, 0}, register.ModeOn: {0, r.Faults}}[mode]
		if r.Faults == 0 || regressions != want[0] || refused != want[1] {
			t.Errorf("fencing %s: %d faults, %d token regressions, %d refused; want %v", mode, r.Faults, regressions, refused, want)
		}
	}
}

func TestBadSpec(t *testing.T) {
	for _, s := range []Spec{{}, {Ops: 10, Fencing: "strict"}} {
		if _, err := Generate(s); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

// TestDeterministic: one Spec, one run (benchmarks compare like with
// like).
func TestDeterministic(t *testing.T) {
	a, _ := Generate(Spec{Ops: 500, Seed: 9})
	b, _ := Generate(Spec{Ops: 500, Seed: 9})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same Spec gave two runs")
	}
}
