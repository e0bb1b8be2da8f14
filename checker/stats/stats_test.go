package stats

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
)

func TestStats(t *testing.T) {
	r := CheckStats(context.Background(), checker.Input{History: checktest.LockHistory(), ApplyLog: checktest.LockLog()})
	if r.Valid != checker.Valid {
		t.Fatalf("valid = %v", r.Valid)
	}
	d := r.Details.(StatsDetails)
	want := map[string]OpCounts{
		"acquire": {OK: 2, Fail: 1, Info: 1},
		"read":    {OK: 2},
		"write":   {OK: 1, Info: 2},
		"release": {OK: 1},
		"session": {OK: 1},
		"lost":    {OK: 1},
		"late":    {OK: 1},
		"pause":   {OK: 1},
		"resume":  {Info: 1},
	}
	if fmt.Sprint(d.Ops) != fmt.Sprint(want) {
		t.Errorf("ops = %v\nwant %v", d.Ops, want)
	}
	if d.LockWaitMS.Count != 2 || d.LockWaitMS.P50 != 2 || d.LockWaitMS.Max != 10 {
		t.Errorf("lock wait = %+v", d.LockWaitMS)
	}
	if d.HoldMS.Count != 1 || d.HoldMS.Max != 10 {
		t.Errorf("hold = %+v", d.HoldMS)
	}
	if d.Sessions["disconnected"] != 1 || d.Lost != 1 || d.LostByState["expired"] != 1 || d.Late != 1 || d.LateByOp["write"] != 1 {
		t.Errorf("sessions %v lost %d %v late %d %v", d.Sessions, d.Lost, d.LostByState, d.Late, d.LateByOp)
	}
	if d.Nemesis["pause"].OK != 1 || d.Nemesis["resume"].Info != 1 || d.NemesisUnverified != 1 {
		t.Errorf("nemesis = %v unverified %d", d.Nemesis, d.NemesisUnverified)
	}
	if d.Timeouts != 3 || d.UnmatchedCompletions != 0 || d.Processes != 4 {
		t.Errorf("timeouts %d unmatched %d processes %d", d.Timeouts, d.UnmatchedCompletions, d.Processes)
	}
	if d.DurationS != 0.026 || d.AcquiresPerS != 2/0.026 {
		t.Errorf("duration %v acquires/s %v", d.DurationS, d.AcquiresPerS)
	}
	if d.Register.TokenRejections != 1 || d.Register.AcceptedWrites != 2 || d.TokenRejections != 1 {
		t.Errorf("register = %+v", d.Register)
	}
	if d.LatencyMS["write"].Count != 1 || d.LatencyMS["write"].Max != 1 {
		t.Errorf("write latency = %+v", d.LatencyMS["write"])
	}
}

func TestPercentiles(t *testing.T) {
	var xs []int64
	for i := int64(100); i >= 1; i-- {
		xs = append(xs, i*1e6)
	}
	p := percentiles(xs)
	if p.Count != 100 || p.P50 != 50 || p.P95 != 95 || p.P99 != 99 || p.Max != 100 {
		t.Errorf("percentiles = %+v", p)
	}
	if (percentiles(nil) != Percentiles{}) {
		t.Error("empty percentiles")
	}
}

// TestNemesisUnverified counts what the scheduler really records for a
// fault it could not verify, for every fault verb: info completions of
// starts and stops (with verified:false, or without a value when the
// outcome is unknown), and an ok that says verified:false. Verified
// completions, fails (nothing was done) and non-faults do not count.
func TestNemesisUnverified(t *testing.T) {
	b := &checktest.Hist{}
	unv := &history.Value{Verified: history.Bool(false)}
	ver := &history.Value{Verified: history.Bool(true)}
	for _, p := range history.Faults {
		b.Inv(-1, p.Start, "").Ev(-1, history.Info, p.Start, "", unv, "not verified")
		b.Inv(-1, p.Stop, "").Ev(-1, history.Info, p.Stop, "", unv, "undo not verified")
		b.Inv(-1, p.Start, "").Ev(-1, history.OK, p.Start, "", ver, "")
		b.Inv(-1, p.Stop, "").Ev(-1, history.OK, p.Stop, "", ver, "")
		b.Inv(-1, p.Start, "").Ev(-1, history.Fail, p.Start, "", nil, "no target")
	}
	b.Inv(-1, history.FKill, "").Ev(-1, history.Info, history.FKill, "", nil, "inject failed") // outcome unknown
	b.Inv(-1, history.FPause, "").Ev(-1, history.OK, history.FPause, "", unv, "")
	b.Inv(-1, history.FRestore, "").Ev(-1, history.Info, history.FRestore, "", unv, "a server did not come back")
	gone := &history.Value{TargetProcess: history.Int(1), Session: "0x1"}
	b.Instant(-1, history.FSessionGone, "", gone)
	r := CheckStats(context.Background(), checker.Input{History: b.Events})
	d := r.Details.(StatsDetails)
	want := 2*len(history.Faults) + 3
	if d.NemesisUnverified != want {
		t.Errorf("nemesis unverified = %d, want %d (by f %v)", d.NemesisUnverified, want, d.NemesisUnverifiedByF)
	}
	if d.NemesisUnverifiedByF[history.FIsolate] != 1 || d.NemesisUnverifiedByF[history.FHeal] != 2 ||
		d.NemesisUnverifiedByF[history.FPause] != 2 || d.NemesisUnverifiedByF[history.FRestore] != 1 {
		t.Errorf("by f = %v", d.NemesisUnverifiedByF)
	}
}

// TestNemesisInstants: a session-gone observation recorded while a fault
// is being injected pairs on its own and leaves the fault's count alone.
func TestNemesisInstants(t *testing.T) {
	b := &checktest.Hist{}
	b.Inv(-1, history.FPause, "")
	b.Instant(-1, history.FSessionGone, "", &history.Value{TargetProcess: history.Int(0), Session: "0x1", LastSeenNS: history.Int64(5)})
	b.Ev(-1, history.OK, history.FPause, "", &history.Value{Verified: history.Bool(true)}, "")
	b.Inv(-1, history.FResume, "").Ev(-1, history.OK, history.FResume, "", &history.Value{Verified: history.Bool(true)}, "")
	d := CheckStats(context.Background(), checker.Input{History: b.Events}).Details.(StatsDetails)
	if d.Nemesis[history.FPause] != (OpCounts{OK: 1}) || d.Nemesis[history.FSessionGone] != (OpCounts{OK: 1}) || d.UnmatchedCompletions != 0 {
		t.Fatalf("nemesis %v, unmatched %d", d.Nemesis, d.UnmatchedCompletions)
	}
}
