package linear

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

func checkReg(t *testing.T, mode string, es []history.Event) (checker.Result, LinearDetails) {
	t.Helper()
	r := CheckRegister(context.Background(), checker.Input{History: es, Fencing: mode})
	var d LinearDetails
	if err := r.DecodeDetails(&d); err != nil && r.Valid != checker.Unknown {
		t.Fatal(err)
	}
	return r, d
}

func checkMutex(t *testing.T, es []history.Event) (checker.Result, LinearDetails) {
	t.Helper()
	r := CheckMutex(context.Background(), checker.Input{History: es})
	var d LinearDetails
	if err := r.DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	return r, d
}

func wantValid(t *testing.T, what string, r checker.Result, want checker.Validity) {
	t.Helper()
	if r.Valid != want {
		t.Fatalf("%s: valid = %v (%s), want %v", what, r.Valid, r.Error, want)
	}
}

func TestRegisterClean(t *testing.T) {
	b := &checktest.Hist{}
	b.Section(0, "k", 10, 0, -1).Section(1, "k", 11, 1, 10).Section(0, "j", 12, 0, -1).Section(2, "k", 13, 2, 11)
	for _, mode := range []string{register.ModeOff, register.ModeOn, register.ModeStrict} {
		r, d := checkReg(t, mode, b.Events)
		wantValid(t, mode, r, checker.Valid)
		if d.Partitions != 2 || d.Operations != 8 || len(d.FailingKeys) != 0 {
			t.Errorf("%s: details %+v", mode, d)
		}
	}
}

// TestRegisterStaleWriteAfterNewer: the paused holder's write (token 10)
// is accepted after the next holder's (token 11). Its ok arrives late, so
// it may linearize anywhere in its interval, but nowhere is both its token
// and its base right.
func TestRegisterStaleWriteAfterNewer(t *testing.T) {
	b := &checktest.Hist{}
	b.Acquire(0, "k", 10).Read(0, "k", 10, 0, -1).WriteInv(0, "k", 1)
	b.Section(1, "k", 11, 0, -1)
	b.Written(0, "k", 10, 1)
	r, d := checkReg(t, register.ModeOff, b.Events)
	wantValid(t, "off", r, checker.Invalid)
	if !slices.Equal(d.FailingKeys, []string{"k"}) {
		t.Errorf("failing keys %v", d.FailingKeys)
	}
	// With fencing the register would have rejected it: an ok is a lie.
	r, _ = checkReg(t, register.ModeOn, b.Events)
	wantValid(t, "on", r, checker.Invalid)
}

// TestRegisterStaleInfoWriteSeenByToken: the stale write is info and
// writes the same value as the newer holder did; only the register's token
// in a later read tells which write the value came from.
func TestRegisterStaleInfoWriteSeenByToken(t *testing.T) {
	build := func(wtok int64) []history.Event {
		b := &checktest.Hist{}
		b.Acquire(0, "k", 10).Read(0, "k", 10, 0, -1).WriteInv(0, "k", 1).Info(0, history.FWrite, "k")
		b.Section(1, "k", 11, 0, -1)
		b.Acquire(2, "k", 12).Read(2, "k", 12, 1, wtok)
		return b.Events
	}
	r, _ := checkReg(t, register.ModeOff, build(10))
	wantValid(t, "read sees the stale token", r, checker.Invalid)
	r, _ = checkReg(t, register.ModeOff, build(11))
	wantValid(t, "read sees the newer token", r, checker.Valid)
	// Without the token in reads, the stale write cannot be told apart
	// from the newer one: this is why read replies carry it.
	r, _ = checkReg(t, register.ModeOff, build(-1))
	wantValid(t, "read without token", r, checker.Valid)
}

// TestRegisterStaleInfoWriteSeenByValue: the counter moved on, so a later
// read of the stale value has no place to come from.
func TestRegisterStaleInfoWriteSeenByValue(t *testing.T) {
	b := &checktest.Hist{}
	b.Acquire(0, "k", 10).Read(0, "k", 10, 0, -1).WriteInv(0, "k", 1).Info(0, history.FWrite, "k")
	b.Section(1, "k", 11, 0, -1).Section(2, "k", 12, 1, -1)
	b.Acquire(3, "k", 13).Read(3, "k", 13, 1, -1)
	r, _ := checkReg(t, register.ModeOff, b.Events)
	wantValid(t, "value regressed", r, checker.Invalid)
}

func TestRegisterLostUpdate(t *testing.T) {
	// Two grants read 0 and both write 1: one increment is lost. The
	// tokens are in order, so only the base promise catches it.
	b := &checktest.Hist{}
	b.Acquire(0, "k", 10).Read(0, "k", 10, 0, -1)
	b.Acquire(1, "k", 11).Read(1, "k", 11, 0, -1)
	b.Write(0, "k", 10, 1).Write(1, "k", 11, 1)
	r, _ := checkReg(t, register.ModeOff, b.Events)
	wantValid(t, "lost update", r, checker.Invalid)
}

func TestRegisterRejections(t *testing.T) {
	// A stale holder rejected after a newer grant read: fencing working.
	b := &checktest.Hist{}
	b.Acquire(0, "k", 10).Read(0, "k", 10, 0, -1).WriteInv(0, "k", 1)
	b.Acquire(1, "k", 11).Read(1, "k", 11, 0, -1)
	b.Rejected(0, "k", 10, 1, 11)
	b.Write(1, "k", 11, 1)
	r, _ := checkReg(t, register.ModeOn, b.Events)
	wantValid(t, "fenced rejection", r, checker.Valid)
	// Mode off never rejects, so the same answer is a broken register.
	r, _ = checkReg(t, register.ModeOff, b.Events)
	wantValid(t, "rejection with fencing off", r, checker.Invalid)

	// A rejection that nothing explains: no newer token was ever seen.
	b = &checktest.Hist{}
	b.Acquire(0, "k", 10).Read(0, "k", 10, 0, -1).WriteInv(0, "k", 1).Rejected(0, "k", 10, 1, 10)
	r, _ = checkReg(t, register.ModeOn, b.Events)
	wantValid(t, "unexplained rejection", r, checker.Invalid)

	// Strict: a second write under one grant is refused.
	b = &checktest.Hist{}
	b.Acquire(0, "k", 10).Read(0, "k", 10, 0, -1).Write(0, "k", 10, 1).WriteInv(0, "k", 2).Rejected(0, "k", 10, 2, 10)
	r, _ = checkReg(t, register.ModeStrict, b.Events)
	wantValid(t, "strict second write", r, checker.Valid)
	r, _ = checkReg(t, register.ModeOn, b.Events)
	wantValid(t, "on second write rejected", r, checker.Invalid)
}

// TestRegisterInfoStaysValid: histories full of unknown operations, each
// of which did or did not take effect, must never be called invalid.
func TestRegisterInfoStaysValid(t *testing.T) {
	b := &checktest.Hist{}
	// Info write that took effect: the next holder sees it.
	b.Acquire(0, "k", 10).Read(0, "k", 10, 0, -1).WriteInv(0, "k", 1).Info(0, history.FWrite, "k")
	b.Acquire(1, "k", 11).Read(1, "k", 11, 1, 10).Write(1, "k", 11, 2).Release(1, "k")
	// Info write that did not: the next holder does not.
	b.Acquire(2, "k", 12).Read(2, "k", 12, 2, 11).WriteInv(2, "k", 3).Info(2, history.FWrite, "k")
	b.Acquire(3, "k", 13).Read(3, "k", 13, 2, 11).Write(3, "k", 13, 3).Release(3, "k")
	// Info read (moved the fence or not), info acquire and release.
	b.Acquire(4, "k", 14).Inv(4, history.FRead, "k").Info(4, history.FRead, "k")
	b.Inv(5, history.FAcquire, "k").Info(5, history.FAcquire, "k")
	b.Acquire(6, "k", 15).Read(6, "k", 15, 3, 13).Write(6, "k", 15, 4)
	b.Inv(6, history.FRelease, "k").Info(6, history.FRelease, "k")
	// A write that never completed at all (the run was killed).
	b.Acquire(7, "k", 16).Read(7, "k", 16, 4, 15).WriteInv(7, "k", 5)
	for _, mode := range []string{register.ModeOff, register.ModeOn, register.ModeStrict} {
		r, d := checkReg(t, mode, b.Events)
		wantValid(t, mode, r, checker.Valid)
		if d.InfoOperations != 4 {
			t.Errorf("%s: %d info operations, want 4 (three writes, one read)", mode, d.InfoOperations)
		}
	}
	r, _ := checkMutex(t, b.Events)
	wantValid(t, "mutex", r, checker.Valid)
}

func TestRegisterFinalRead(t *testing.T) {
	// The stale write lands last; only the controller's final read (no
	// token, reports the register's token) can see it.
	b := &checktest.Hist{}
	b.Acquire(0, "k", 10).Read(0, "k", 10, 0, -1).WriteInv(0, "k", 1).Info(0, history.FWrite, "k")
	b.Section(1, "k", 11, 0, -1)
	final := func(tok int64) []history.Event {
		c := &checktest.Hist{Events: slices.Clone(b.Events), T: b.T}
		c.Inv(9, history.FFinalRead, "k").Ev(9, history.OK, history.FFinalRead, "k", &history.Value{N: checktest.I64(1), Token: checktest.I64(tok)}, "")
		return c.Events
	}
	r, _ := checkReg(t, register.ModeOff, final(10))
	wantValid(t, "final read of the stale write", r, checker.Invalid)
	r, _ = checkReg(t, register.ModeOff, final(11))
	wantValid(t, "final read of the newer write", r, checker.Valid)
}

func TestRegisterNeedsMode(t *testing.T) {
	r, _ := checkReg(t, "", (&checktest.Hist{}).Section(0, "k", 1, 0, -1).Events)
	if r.Valid != checker.Unknown || !strings.Contains(r.Error, "fencing") {
		t.Fatalf("no mode: %v %s", r.Valid, r.Error)
	}
}

func TestMutexClean(t *testing.T) {
	b := &checktest.Hist{}
	b.Acquire(0, "k", 1)
	b.Inv(1, history.FAcquire, "k") // waits
	b.Release(0, "k")
	b.Acquired(1, "k", 2).Release(1, "k").Acquire(0, "j", 3).Release(0, "j")
	r, d := checkMutex(t, b.Events)
	wantValid(t, "clean", r, checker.Valid)
	if d.Partitions != 2 || d.Note == "" {
		t.Errorf("details %+v", d)
	}
}

func TestMutexViolations(t *testing.T) {
	b := &checktest.Hist{}
	b.Acquire(0, "k", 1).Acquire(1, "k", 2)
	r, d := checkMutex(t, b.Events)
	wantValid(t, "double grant", r, checker.Invalid)
	if !slices.Equal(d.FailingKeys, []string{"k"}) {
		t.Errorf("failing %v", d.FailingKeys)
	}
	b = &checktest.Hist{}
	b.Acquire(0, "k", 1).Release(1, "k")
	r, _ = checkMutex(t, b.Events)
	wantValid(t, "release by a non-holder", r, checker.Invalid)
	b = &checktest.Hist{}
	b.Acquire(0, "k", 1).Acquire(0, "k", 2)
	r, _ = checkMutex(t, b.Events)
	wantValid(t, "second acquire by the holder", r, checker.Invalid)
}

// TestMutexPausedHolder is the SIGSTOP story: the holder's write times out
// (it is paused), another client gets the lock, and the paused one reports
// the loss only when it wakes up.
func TestMutexPausedHolder(t *testing.T) {
	base := func() *checktest.Hist {
		b := &checktest.Hist{}
		b.Acquire(0, "k", 1).Read(0, "k", 1, 0, -1).WriteInv(0, "k", 1).Info(0, history.FWrite, "k")
		b.Acquire(1, "k", 2).Release(1, "k")
		return b
	}
	r, _ := checkMutex(t, base().Events)
	wantValid(t, "retired holder, never heard of again", r, checker.Valid)
	r, _ = checkMutex(t, base().Instant(0, history.FLost, "k", &history.Value{Token: checktest.I64(1), State: "expired"}).Events)
	wantValid(t, "retired holder that says it lost the lock after the next grant", r, checker.Invalid)
	// Without retirement: a holder that loses the lock, then someone else
	// acquires, is fine.
	b := &checktest.Hist{}
	b.Acquire(0, "k", 1).Instant(0, history.FLost, "k", &history.Value{}).Acquire(1, "k", 2)
	r, _ = checkMutex(t, b.Events)
	wantValid(t, "lost, then granted", r, checker.Valid)
	// Failed release ("revoked") ends the hold too.
	b = &checktest.Hist{}
	b.Acquire(0, "k", 1).Inv(0, history.FRelease, "k").Ev(0, history.Fail, history.FRelease, "k", nil, "revoked").Acquire(1, "k", 2)
	r, _ = checkMutex(t, b.Events)
	wantValid(t, "revoked release, then granted", r, checker.Valid)
}

// TestLateResponse: the answer to a write that was completed as info tells
// its outcome, which the register checker uses.
func TestLateResponse(t *testing.T) {
	build := func(state history.Type, mode string) []history.Event {
		b := &checktest.Hist{}
		b.Acquire(0, "k", 10).Read(0, "k", 10, 0, -1).WriteInv(0, "k", 1).Info(0, history.FWrite, "k")
		b.Acquire(1, "k", 11).Read(1, "k", 11, 0, -1)
		v := &history.Value{Token: checktest.I64(10), N: checktest.I64(1), Of: history.FWrite, State: string(state)}
		if state == history.Fail {
			v.Current = checktest.I64(11)
		}
		b.Instant(0, history.FLate, "k", v)
		b.Write(1, "k", 11, 1).Release(1, "k")
		return b.Events
	}
	// Without the late answer the stale write is invisible (overwritten
	// before anyone read it); with it, it was accepted after a newer
	// grant had read: a lost update.
	r, d := checkReg(t, register.ModeOff, build(history.OK, register.ModeOff))
	wantValid(t, "late ok, fencing off", r, checker.Invalid)
	if d.InfoOperations != 0 {
		t.Errorf("the late answer should have closed the info write: %d info", d.InfoOperations)
	}
	r, _ = checkReg(t, register.ModeOn, build(history.Fail, register.ModeOn))
	wantValid(t, "late rejection, fencing on", r, checker.Valid)
}

func TestRetiredProcessReused(t *testing.T) {
	// A malformed history reuses a retired number: the new operations must
	// not be glued to the unknown one.
	b := &checktest.Hist{}
	b.Acquire(0, "k", 1).Inv(0, history.FRelease, "k").Info(0, history.FRelease, "k")
	b.Acquire(0, "k", 2).Release(0, "k")
	r, _ := checkMutex(t, b.Events)
	wantValid(t, "reuse", r, checker.Valid)
}

func TestVisualization(t *testing.T) {
	dir := t.TempDir()
	b := &checktest.Hist{}
	b.Acquire(0, "SKU/1", 10).Read(0, "SKU/1", 10, 0, -1).WriteInv(0, "SKU/1", 1)
	b.Ev(-1, history.Invoke, history.FPause, "", &history.Value{PID: 42, Target: "process 0"}, "")
	b.Ev(-1, history.OK, history.FPause, "", &history.Value{PID: 42}, "")
	b.Instant(1, history.FSession, "", &history.Value{State: "connected", Session: "0x1"})
	b.Acquire(1, "SKU/1", 11).Read(1, "SKU/1", 11, 0, -1)
	b.Inv(2, history.FRead, "SKU/1").Ev(2, history.Fail, history.FRead, "SKU/1", nil, "not holding SKU/1")
	b.Write(1, "SKU/1", 11, 1)
	b.Ev(-1, history.Invoke, history.FResume, "", &history.Value{PID: 42}, "")
	b.Ev(-1, history.OK, history.FResume, "", &history.Value{PID: 42}, "")
	b.Written(0, "SKU/1", 10, 1)
	b.Section(3, "ok", 12, 0, -1)
	r := CheckRegister(context.Background(), checker.Input{History: b.Events, Fencing: register.ModeOff, Dir: dir})
	wantValid(t, "register", r, checker.Invalid)
	var d LinearDetails
	if err := r.DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	rel := d.Visualizations["SKU/1"]
	if rel != filepath.Join(VisualDir, "register-SKU_1.html") || d.Keys["SKU/1"].Visualization != rel {
		t.Fatalf("visualisations %v, key %+v", d.Visualizations, d.Keys["SKU/1"])
	}
	if _, ok := d.Visualizations["ok"]; ok {
		t.Error("a linearizable key was drawn")
	}
	page, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pause pid 42", "p1 connected", "read fail", "write(1, t10) on 0"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if d.Excluded["failed read"] != 1 {
		t.Errorf("excluded %v", d.Excluded)
	}
}

// TestBudgetGivesUnknown: a check that cannot finish is unknown, never a
// verdict, whether the history is linearizable or not.
func TestBudgetGivesUnknown(t *testing.T) {
	bad := (&checktest.Hist{}).Section(0, "k", 1, 0, -1).Acquire(0, "k", 2).Acquire(1, "k", 3).Read(1, "k", 3, 0, -1).Events
	good := (&checktest.Hist{}).Section(0, "k", 1, 0, -1).Events
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, es := range [][]history.Event{bad, good} {
		for _, c := range []checker.Checker{{Name: NameRegister, Check: CheckRegister}, {Name: NameMutex, Check: CheckMutex}} {
			r := c.Check(ctx, checker.Input{History: es, Fencing: register.ModeOff})
			if r.Valid != checker.Unknown || r.Error == "" {
				t.Errorf("%s with a cancelled context: %v %q", c.Name, r.Valid, r.Error)
			}
		}
	}
	// The budget ends while porcupine runs: every step then fails, so
	// porcupine answers "illegal", which must become unknown.
	parts, _ := wholeSegments(NameRegister, register.ModeOff, good)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	m := regModel{mode: register.ModeOff}
	pr := checkPartition(ctx, parts["k"].p, func(c context.Context) porcupineModel {
		md := m.porcupine(c, m.init())
		inner := md.StepContext
		md.StepContext = func(pc context.Context, s, in, out any) (bool, any) {
			cancel()
			return inner(pc, s, in, out)
		}
		return md
	})
	if pr.Valid != checker.Unknown || pr.Error == "" {
		t.Fatalf("partition stopped mid-search: %+v", pr)
	}
}

type porcupineModel = porcupine.Model

// wholeSegments splits es into one segment per key of the checker's
// model, without cuts: what the whole-history check runs porcupine on.
func wholeSegments(name, mode string, es []history.Event) (map[string]*segment, *linHistory) {
	parts := map[string]*segment{}
	var m segModel = mutexSeg{}
	if name == NameRegister {
		m = regSeg{regModel{mode: mode}}
	}
	g := newSegmenter(name, m, false, -1, func(s *segment) { parts[s.key] = s })
	sp := newSplitter(g)
	for _, e := range es {
		sp.event(e)
		g.advance(e.Time)
	}
	sp.finish()
	g.finish()
	return parts, sp.h
}

func TestPartitionTimed(t *testing.T) {
	_, d := checkReg(t, register.ModeOff, (&checktest.Hist{}).Section(0, "k", 1, 0, -1).Events)
	if d.Keys["k"].ElapsedMS <= 0 {
		t.Fatalf("key time not recorded: %+v", d.Keys["k"])
	}
}

// TestFaultAnnotations: the pages draw every fault from its start to its
// stop, paired by history.StopVerb: isolate lasts until heal, expire until
// expire-end (before, verbs the checker did not know were drawn as lasting
// only their injection), and a start that failed is not drawn.
func TestFaultAnnotations(t *testing.T) {
	b := &checktest.Hist{}
	b.Ev(-1, history.Invoke, history.FIsolate, "", &history.Value{Target: "isolate-holder"}, "")
	b.Ev(-1, history.OK, history.FIsolate, "", &history.Value{Target: "holder of k", PID: 7, TargetProcess: history.Int(0)}, "")
	b.Section(0, "k", 1, 0, -1)
	b.Ev(-1, history.Invoke, history.FHeal, "", &history.Value{PID: 7}, "")
	b.Ev(-1, history.OK, history.FHeal, "", &history.Value{PID: 7}, "")
	b.Ev(-1, history.Invoke, history.FExpire, "", nil, "")
	b.Ev(-1, history.OK, history.FExpire, "", &history.Value{PID: 8}, "")
	b.Ev(-1, history.Invoke, history.FExpireEnd, "", nil, "")
	b.Ev(-1, history.OK, history.FExpireEnd, "", nil, "")
	b.Ev(-1, history.Invoke, history.FPause, "", nil, "")
	b.Ev(-1, history.Fail, history.FPause, "", nil, "no target")
	_, h := wholeSegments(NameMutex, "", b.Events)
	type span struct {
		desc       string
		start, end int64
	}
	var got []span
	for _, a := range h.nemesisNotes() {
		got = append(got, span{a.Description, a.Start, a.End})
	}
	want := []span{{"isolate pid 7", 10, 120}, {"expire pid 8", 130, 160}}
	if !slices.Equal(got, want) {
		t.Fatalf("fault annotations %+v, want %+v", got, want)
	}
}
