package checker

import (
	"testing"

	"github.com/zkchaos/zkchaos/history"
)

// nem is a nemesis event at t (ns).
func nem(t int64, typ history.Type, f string, v *history.Value) history.Event {
	return history.Event{Time: t, Process: history.Nemesis, Type: typ, F: f, Value: v}
}

func TestFaultWindowsPairByVerb(t *testing.T) {
	h := []history.Event{
		// isolate-holder: isolate ... heal (a verb of its own, ended by heal).
		nem(10, history.Invoke, history.FIsolate, &history.Value{Target: "isolate-holder"}),
		nem(20, history.OK, history.FIsolate, &history.Value{Target: "holder of K", PID: 7, TargetProcess: history.Int(3)}),
		// A session-gone observation in the middle is no fault and ends none.
		nem(25, history.Invoke, history.FSessionGone, &history.Value{TargetProcess: history.Int(3), Session: "0x1"}),
		nem(25, history.OK, history.FSessionGone, &history.Value{TargetProcess: history.Int(3), Session: "0x1"}),
		nem(30, history.Invoke, history.FHeal, &history.Value{PID: 7}),
		nem(40, history.OK, history.FHeal, &history.Value{PID: 7}),
		// expire-holder: expire ... expire-end; an old history names the
		// worker in the text only.
		nem(50, history.Invoke, history.FExpire, &history.Value{Target: "expire-holder"}),
		nem(55, history.OK, history.FExpire, &history.Value{Target: "process 4 (pid 8) holding K", PID: 8}),
		nem(60, history.Invoke, history.FExpireEnd, nil),
		nem(65, history.OK, history.FExpireEnd, nil),
		// A start that failed did nothing: no window.
		nem(70, history.Invoke, history.FPause, &history.Value{Target: "pause-holder"}),
		nem(71, history.Fail, history.FPause, &history.Value{Target: "pause-holder"}),
		// A partition never healed in the history, then the final restore
		// (its own window) ends it.
		nem(80, history.Invoke, history.FPartition, &history.Value{Target: "partition-zk-halves"}),
		nem(85, history.OK, history.FPartition, &history.Value{Target: "n1 | n2 n3"}),
		nem(90, history.Invoke, history.FRestore, nil),
		nem(99, history.OK, history.FRestore, nil),
		nem(100, history.Invoke, history.FKill, &history.Value{Target: "kill-zk"}),
		nem(101, history.OK, history.FKill, &history.Value{Target: "n2"}),
	}
	got := FaultWindows(h)
	want := []FaultWindow{
		{F: history.FIsolate, Stop: history.FHeal, Target: "holder of K", PID: 7, From: 10, To: 40, Process: 3},
		{F: history.FExpire, Stop: history.FExpireEnd, Target: "process 4 (pid 8) holding K", PID: 8, From: 50, To: 65, Process: 4},
		{F: history.FPartition, Stop: history.FHeal, Target: "n1 | n2 n3", From: 80, To: 99, Process: -1},
		{F: history.FRestore, From: 90, To: 99, Process: -1},
		{F: history.FKill, Stop: history.FRestart, Target: "n2", From: 100, To: -1, Process: -1},
	}
	if len(got) != len(want) {
		t.Fatalf("windows:\n%+v\nwant\n%+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("window %d = %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// The target_process field wins over a description that names another
// process; heal closes the window of the PID it names.
func TestFaultWindowsTargetField(t *testing.T) {
	h := []history.Event{
		nem(10, history.Invoke, history.FPartition, nil),
		nem(11, history.OK, history.FPartition, &history.Value{Target: "n1 | n2 n3"}),
		nem(12, history.Invoke, history.FIsolate, nil),
		nem(13, history.OK, history.FIsolate, &history.Value{Target: "process 9", PID: 7, TargetProcess: history.Int(2)}),
		nem(20, history.Invoke, history.FHeal, &history.Value{PID: 7}),
		nem(21, history.OK, history.FHeal, &history.Value{PID: 7}),
	}
	got := FaultWindows(h)
	if len(got) != 2 || got[1].Process != 2 || got[1].To != 21 || got[0].To != -1 {
		t.Fatalf("windows %+v", got)
	}
}
