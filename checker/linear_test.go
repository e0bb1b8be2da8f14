package checker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/register"
)

// hb builds histories by hand; every event is 10 ns after the previous.
type hb struct {
	es []history.Event
	t  int64
}

func (b *hb) ev(p int, typ history.Type, f, key string, v *history.Value, errText string) *hb {
	b.t += 10
	proc := history.Process(p)
	if p < 0 {
		proc = history.Nemesis
	}
	b.es = append(b.es, history.Event{Index: int64(len(b.es)), Time: b.t, Process: proc, Type: typ, F: f, Key: key, Value: v, Error: errText})
	return b
}

func i64(v int64) *int64 { return &v }

func (b *hb) inv(p int, f, key string) *hb { return b.ev(p, history.Invoke, f, key, nil, "") }

func (b *hb) acquire(p int, key string, tok int64) *hb {
	return b.inv(p, history.FAcquire, key).acquired(p, key, tok)
}

func (b *hb) acquired(p int, key string, tok int64) *hb {
	return b.ev(p, history.OK, history.FAcquire, key, &history.Value{Token: i64(tok)}, "")
}

func (b *hb) release(p int, key string) *hb {
	return b.inv(p, history.FRelease, key).ev(p, history.OK, history.FRelease, key, &history.Value{}, "")
}

// read is an ok read of n under token tok; wtok < 0 leaves out the
// register's token of the last write (histories from before it was
// recorded).
func (b *hb) read(p int, key string, tok, n, wtok int64) *hb {
	v := &history.Value{Token: i64(tok), N: i64(n)}
	if wtok >= 0 {
		v.Current = i64(wtok)
	}
	return b.inv(p, history.FRead, key).ev(p, history.OK, history.FRead, key, v, "")
}

func (b *hb) writeInv(p int, key string, n int64) *hb {
	return b.ev(p, history.Invoke, history.FWrite, key, &history.Value{N: i64(n)}, "")
}

func (b *hb) written(p int, key string, tok, n int64) *hb {
	return b.ev(p, history.OK, history.FWrite, key, &history.Value{Token: i64(tok), N: i64(n)}, "")
}

func (b *hb) write(p int, key string, tok, n int64) *hb {
	return b.writeInv(p, key, n).written(p, key, tok, n)
}

func (b *hb) rejected(p int, key string, tok, n, fence int64) *hb {
	return b.ev(p, history.Fail, history.FWrite, key, &history.Value{Token: i64(tok), N: i64(n), Current: i64(fence)}, "rejected")
}

func (b *hb) info(p int, f, key string) *hb { return b.ev(p, history.Info, f, key, nil, "timeout") }

func (b *hb) instant(p int, f, key string, v *history.Value) *hb {
	return b.ev(p, history.Invoke, f, key, v, "").ev(p, history.OK, f, key, v, "")
}

// section is one clean critical section: acquire, read n, write n+1,
// release.
func (b *hb) section(p int, key string, tok, n, prevTok int64) *hb {
	return b.acquire(p, key, tok).read(p, key, tok, n, prevTok).write(p, key, tok, n+1).release(p, key)
}

func checkReg(t *testing.T, mode string, es []history.Event) (Result, LinearDetails) {
	t.Helper()
	r := CheckRegister(context.Background(), Input{History: es, Fencing: mode})
	var d LinearDetails
	if err := r.DecodeDetails(&d); err != nil && r.Valid != Unknown {
		t.Fatal(err)
	}
	return r, d
}

func checkMutex(t *testing.T, es []history.Event) (Result, LinearDetails) {
	t.Helper()
	r := CheckMutex(context.Background(), Input{History: es})
	var d LinearDetails
	if err := r.DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	return r, d
}

func wantValid(t *testing.T, what string, r Result, want Validity) {
	t.Helper()
	if r.Valid != want {
		t.Fatalf("%s: valid = %v (%s), want %v", what, r.Valid, r.Error, want)
	}
}

func TestRegisterClean(t *testing.T) {
	b := &hb{}
	b.section(0, "k", 10, 0, -1).section(1, "k", 11, 1, 10).section(0, "j", 12, 0, -1).section(2, "k", 13, 2, 11)
	for _, mode := range []string{register.ModeOff, register.ModeOn, register.ModeStrict} {
		r, d := checkReg(t, mode, b.es)
		wantValid(t, mode, r, Valid)
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
	b := &hb{}
	b.acquire(0, "k", 10).read(0, "k", 10, 0, -1).writeInv(0, "k", 1)
	b.section(1, "k", 11, 0, -1)
	b.written(0, "k", 10, 1)
	r, d := checkReg(t, register.ModeOff, b.es)
	wantValid(t, "off", r, Invalid)
	if !slices.Equal(d.FailingKeys, []string{"k"}) {
		t.Errorf("failing keys %v", d.FailingKeys)
	}
	// With fencing the register would have rejected it: an ok is a lie.
	r, _ = checkReg(t, register.ModeOn, b.es)
	wantValid(t, "on", r, Invalid)
}

// TestRegisterStaleInfoWriteSeenByToken: the stale write is info and
// writes the same value as the newer holder did; only the register's token
// in a later read tells which write the value came from.
func TestRegisterStaleInfoWriteSeenByToken(t *testing.T) {
	build := func(wtok int64) []history.Event {
		b := &hb{}
		b.acquire(0, "k", 10).read(0, "k", 10, 0, -1).writeInv(0, "k", 1).info(0, history.FWrite, "k")
		b.section(1, "k", 11, 0, -1)
		b.acquire(2, "k", 12).read(2, "k", 12, 1, wtok)
		return b.es
	}
	r, _ := checkReg(t, register.ModeOff, build(10))
	wantValid(t, "read sees the stale token", r, Invalid)
	r, _ = checkReg(t, register.ModeOff, build(11))
	wantValid(t, "read sees the newer token", r, Valid)
	// Without the token in reads, the stale write cannot be told apart
	// from the newer one: this is why read replies carry it.
	r, _ = checkReg(t, register.ModeOff, build(-1))
	wantValid(t, "read without token", r, Valid)
}

// TestRegisterStaleInfoWriteSeenByValue: the counter moved on, so a later
// read of the stale value has no place to come from.
func TestRegisterStaleInfoWriteSeenByValue(t *testing.T) {
	b := &hb{}
	b.acquire(0, "k", 10).read(0, "k", 10, 0, -1).writeInv(0, "k", 1).info(0, history.FWrite, "k")
	b.section(1, "k", 11, 0, -1).section(2, "k", 12, 1, -1)
	b.acquire(3, "k", 13).read(3, "k", 13, 1, -1)
	r, _ := checkReg(t, register.ModeOff, b.es)
	wantValid(t, "value regressed", r, Invalid)
}

func TestRegisterLostUpdate(t *testing.T) {
	// Two grants read 0 and both write 1: one increment is lost. The
	// tokens are in order, so only the base promise catches it.
	b := &hb{}
	b.acquire(0, "k", 10).read(0, "k", 10, 0, -1)
	b.acquire(1, "k", 11).read(1, "k", 11, 0, -1)
	b.write(0, "k", 10, 1).write(1, "k", 11, 1)
	r, _ := checkReg(t, register.ModeOff, b.es)
	wantValid(t, "lost update", r, Invalid)
}

func TestRegisterRejections(t *testing.T) {
	// A stale holder rejected after a newer grant read: fencing working.
	b := &hb{}
	b.acquire(0, "k", 10).read(0, "k", 10, 0, -1).writeInv(0, "k", 1)
	b.acquire(1, "k", 11).read(1, "k", 11, 0, -1)
	b.rejected(0, "k", 10, 1, 11)
	b.write(1, "k", 11, 1)
	r, _ := checkReg(t, register.ModeOn, b.es)
	wantValid(t, "fenced rejection", r, Valid)
	// Mode off never rejects, so the same answer is a broken register.
	r, _ = checkReg(t, register.ModeOff, b.es)
	wantValid(t, "rejection with fencing off", r, Invalid)

	// A rejection that nothing explains: no newer token was ever seen.
	b = &hb{}
	b.acquire(0, "k", 10).read(0, "k", 10, 0, -1).writeInv(0, "k", 1).rejected(0, "k", 10, 1, 10)
	r, _ = checkReg(t, register.ModeOn, b.es)
	wantValid(t, "unexplained rejection", r, Invalid)

	// Strict: a second write under one grant is refused.
	b = &hb{}
	b.acquire(0, "k", 10).read(0, "k", 10, 0, -1).write(0, "k", 10, 1).writeInv(0, "k", 2).rejected(0, "k", 10, 2, 10)
	r, _ = checkReg(t, register.ModeStrict, b.es)
	wantValid(t, "strict second write", r, Valid)
	r, _ = checkReg(t, register.ModeOn, b.es)
	wantValid(t, "on second write rejected", r, Invalid)
}

// TestRegisterInfoStaysValid: histories full of unknown operations, each
// of which did or did not take effect, must never be called invalid.
func TestRegisterInfoStaysValid(t *testing.T) {
	b := &hb{}
	// Info write that took effect: the next holder sees it.
	b.acquire(0, "k", 10).read(0, "k", 10, 0, -1).writeInv(0, "k", 1).info(0, history.FWrite, "k")
	b.acquire(1, "k", 11).read(1, "k", 11, 1, 10).write(1, "k", 11, 2).release(1, "k")
	// Info write that did not: the next holder does not.
	b.acquire(2, "k", 12).read(2, "k", 12, 2, 11).writeInv(2, "k", 3).info(2, history.FWrite, "k")
	b.acquire(3, "k", 13).read(3, "k", 13, 2, 11).write(3, "k", 13, 3).release(3, "k")
	// Info read (moved the fence or not), info acquire and release.
	b.acquire(4, "k", 14).inv(4, history.FRead, "k").info(4, history.FRead, "k")
	b.inv(5, history.FAcquire, "k").info(5, history.FAcquire, "k")
	b.acquire(6, "k", 15).read(6, "k", 15, 3, 13).write(6, "k", 15, 4)
	b.inv(6, history.FRelease, "k").info(6, history.FRelease, "k")
	// A write that never completed at all (the run was killed).
	b.acquire(7, "k", 16).read(7, "k", 16, 4, 15).writeInv(7, "k", 5)
	for _, mode := range []string{register.ModeOff, register.ModeOn, register.ModeStrict} {
		r, d := checkReg(t, mode, b.es)
		wantValid(t, mode, r, Valid)
		if d.InfoOperations != 4 {
			t.Errorf("%s: %d info operations, want 4 (three writes, one read)", mode, d.InfoOperations)
		}
	}
	r, _ := checkMutex(t, b.es)
	wantValid(t, "mutex", r, Valid)
}

// TestGeneratedHistoriesValid: simulated correct runs with many unknown
// operations, in every mode.
func TestGeneratedHistoriesValid(t *testing.T) {
	for seed := range uint64(20) {
		for _, mode := range []string{register.ModeOff, register.ModeOn, register.ModeStrict} {
			spec := genSpec{Seed: seed, Events: 3000, Keys: 3, WorkersPerKey: 1 + int(seed%5), InfoShare: 0.3, Mode: mode}
			es, log := genLockHistory(spec)
			in := Input{History: es, ApplyLog: log, Fencing: mode}
			for _, c := range []Checker{{NameRegister, CheckRegister}, {NameMutex, CheckMutex}, {NameDoubleWriter, CheckDoubleWriter}} {
				if r := c.Check(context.Background(), in); r.Valid != Valid {
					t.Fatalf("%+v: %s = %v (%s)", spec, c.Name, r.Valid, r.Error)
				}
			}
		}
	}
}

// TestGeneratedStaleWrites: paused holders whose writes land late. With
// fencing the register refuses them and both resource checkers pass;
// without, both must fail, and the mutex fails either way.
func TestGeneratedStaleWrites(t *testing.T) {
	for seed := range uint64(10) {
		for _, mode := range []string{register.ModeOff, register.ModeOn} {
			spec := genSpec{Seed: seed, Events: 3000, Keys: 2, WorkersPerKey: 3, InfoShare: 0.1, StaleShare: 0.05, Mode: mode}
			es, log := genLockHistory(spec)
			in := Input{History: es, ApplyLog: log, Fencing: mode}
			want := Valid
			if mode == register.ModeOff {
				want = Invalid
			}
			if r := CheckRegister(context.Background(), in); r.Valid != want {
				t.Errorf("%+v: register = %v (%s), want %v", spec, r.Valid, r.Error, want)
			}
			if r := CheckDoubleWriter(context.Background(), in); r.Valid != want {
				t.Errorf("%+v: double-writer = %v, want %v", spec, r.Valid, want)
			}
			if r := CheckMutex(context.Background(), in); r.Valid != Invalid {
				t.Errorf("%+v: mutex = %v, want false (a paused holder's lock was granted again)", spec, r.Valid)
			}
		}
	}
}

func TestRegisterFinalRead(t *testing.T) {
	// The stale write lands last; only the controller's final read (no
	// token, reports the register's token) can see it.
	b := &hb{}
	b.acquire(0, "k", 10).read(0, "k", 10, 0, -1).writeInv(0, "k", 1).info(0, history.FWrite, "k")
	b.section(1, "k", 11, 0, -1)
	final := func(tok int64) []history.Event {
		c := &hb{es: slices.Clone(b.es), t: b.t}
		c.inv(9, history.FFinalRead, "k").ev(9, history.OK, history.FFinalRead, "k", &history.Value{N: i64(1), Token: i64(tok)}, "")
		return c.es
	}
	r, _ := checkReg(t, register.ModeOff, final(10))
	wantValid(t, "final read of the stale write", r, Invalid)
	r, _ = checkReg(t, register.ModeOff, final(11))
	wantValid(t, "final read of the newer write", r, Valid)
}

func TestRegisterNeedsMode(t *testing.T) {
	r, _ := checkReg(t, "", (&hb{}).section(0, "k", 1, 0, -1).es)
	if r.Valid != Unknown || !strings.Contains(r.Error, "fencing") {
		t.Fatalf("no mode: %v %s", r.Valid, r.Error)
	}
}

func TestMutexClean(t *testing.T) {
	b := &hb{}
	b.acquire(0, "k", 1)
	b.inv(1, history.FAcquire, "k") // waits
	b.release(0, "k")
	b.acquired(1, "k", 2).release(1, "k").acquire(0, "j", 3).release(0, "j")
	r, d := checkMutex(t, b.es)
	wantValid(t, "clean", r, Valid)
	if d.Partitions != 2 || d.Note == "" {
		t.Errorf("details %+v", d)
	}
}

func TestMutexViolations(t *testing.T) {
	b := &hb{}
	b.acquire(0, "k", 1).acquire(1, "k", 2)
	r, d := checkMutex(t, b.es)
	wantValid(t, "double grant", r, Invalid)
	if !slices.Equal(d.FailingKeys, []string{"k"}) {
		t.Errorf("failing %v", d.FailingKeys)
	}
	b = &hb{}
	b.acquire(0, "k", 1).release(1, "k")
	r, _ = checkMutex(t, b.es)
	wantValid(t, "release by a non-holder", r, Invalid)
	b = &hb{}
	b.acquire(0, "k", 1).acquire(0, "k", 2)
	r, _ = checkMutex(t, b.es)
	wantValid(t, "second acquire by the holder", r, Invalid)
}

// TestMutexPausedHolder is the SIGSTOP story: the holder's write times out
// (it is paused), another client gets the lock, and the paused one reports
// the loss only when it wakes up.
func TestMutexPausedHolder(t *testing.T) {
	base := func() *hb {
		b := &hb{}
		b.acquire(0, "k", 1).read(0, "k", 1, 0, -1).writeInv(0, "k", 1).info(0, history.FWrite, "k")
		b.acquire(1, "k", 2).release(1, "k")
		return b
	}
	r, _ := checkMutex(t, base().es)
	wantValid(t, "retired holder, never heard of again", r, Valid)
	r, _ = checkMutex(t, base().instant(0, history.FLost, "k", &history.Value{Token: i64(1), State: "expired"}).es)
	wantValid(t, "retired holder that says it lost the lock after the next grant", r, Invalid)
	// Without retirement: a holder that loses the lock, then someone else
	// acquires, is fine.
	b := &hb{}
	b.acquire(0, "k", 1).instant(0, history.FLost, "k", &history.Value{}).acquire(1, "k", 2)
	r, _ = checkMutex(t, b.es)
	wantValid(t, "lost, then granted", r, Valid)
	// Failed release ("revoked") ends the hold too.
	b = &hb{}
	b.acquire(0, "k", 1).inv(0, history.FRelease, "k").ev(0, history.Fail, history.FRelease, "k", nil, "revoked").acquire(1, "k", 2)
	r, _ = checkMutex(t, b.es)
	wantValid(t, "revoked release, then granted", r, Valid)
}

// TestLateResponse: the answer to a write that was completed as info tells
// its outcome, which the register checker uses.
func TestLateResponse(t *testing.T) {
	build := func(state history.Type, mode string) []history.Event {
		b := &hb{}
		b.acquire(0, "k", 10).read(0, "k", 10, 0, -1).writeInv(0, "k", 1).info(0, history.FWrite, "k")
		b.acquire(1, "k", 11).read(1, "k", 11, 0, -1)
		v := &history.Value{Token: i64(10), N: i64(1), Of: history.FWrite, State: string(state)}
		if state == history.Fail {
			v.Current = i64(11)
		}
		b.instant(0, history.FLate, "k", v)
		b.write(1, "k", 11, 1).release(1, "k")
		return b.es
	}
	// Without the late answer the stale write is invisible (overwritten
	// before anyone read it); with it, it was accepted after a newer
	// grant had read: a lost update.
	r, d := checkReg(t, register.ModeOff, build(history.OK, register.ModeOff))
	wantValid(t, "late ok, fencing off", r, Invalid)
	if d.InfoOperations != 0 {
		t.Errorf("the late answer should have closed the info write: %d info", d.InfoOperations)
	}
	r, _ = checkReg(t, register.ModeOn, build(history.Fail, register.ModeOn))
	wantValid(t, "late rejection, fencing on", r, Valid)
}

func TestRetiredProcessReused(t *testing.T) {
	// A malformed history reuses a retired number: the new operations must
	// not be glued to the unknown one.
	b := &hb{}
	b.acquire(0, "k", 1).inv(0, history.FRelease, "k").info(0, history.FRelease, "k")
	b.acquire(0, "k", 2).release(0, "k")
	r, _ := checkMutex(t, b.es)
	wantValid(t, "reuse", r, Valid)
}

func TestVisualization(t *testing.T) {
	dir := t.TempDir()
	b := &hb{}
	b.acquire(0, "SKU/1", 10).read(0, "SKU/1", 10, 0, -1).writeInv(0, "SKU/1", 1)
	b.ev(-1, history.Invoke, history.FPause, "", &history.Value{PID: 42, Target: "process 0"}, "")
	b.ev(-1, history.OK, history.FPause, "", &history.Value{PID: 42}, "")
	b.instant(1, history.FSession, "", &history.Value{State: "connected", Session: "0x1"})
	b.acquire(1, "SKU/1", 11).read(1, "SKU/1", 11, 0, -1)
	b.inv(2, history.FRead, "SKU/1").ev(2, history.Fail, history.FRead, "SKU/1", nil, "not holding SKU/1")
	b.write(1, "SKU/1", 11, 1)
	b.ev(-1, history.Invoke, history.FResume, "", &history.Value{PID: 42}, "")
	b.ev(-1, history.OK, history.FResume, "", &history.Value{PID: 42}, "")
	b.written(0, "SKU/1", 10, 1)
	b.section(3, "ok", 12, 0, -1)
	r := CheckRegister(context.Background(), Input{History: b.es, Fencing: register.ModeOff, Dir: dir})
	wantValid(t, "register", r, Invalid)
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
	bad := (&hb{}).section(0, "k", 1, 0, -1).acquire(0, "k", 2).acquire(1, "k", 3).read(1, "k", 3, 0, -1).es
	good := (&hb{}).section(0, "k", 1, 0, -1).es
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, es := range [][]history.Event{bad, good} {
		for _, c := range []Checker{{NameRegister, CheckRegister}, {NameMutex, CheckMutex}} {
			r := c.Check(ctx, Input{History: es, Fencing: register.ModeOff})
			if r.Valid != Unknown || r.Error == "" {
				t.Errorf("%s with a cancelled context: %v %q", c.Name, r.Valid, r.Error)
			}
		}
	}
	// The budget ends while porcupine runs: every step then fails, so
	// porcupine answers "illegal", which must become unknown.
	h := splitHistory(good)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	m := regModel{mode: register.ModeOff}
	pr := checkPartition(ctx, h.register["k"], func(c context.Context) porcupineModel {
		md := m.porcupine(c)
		inner := md.StepContext
		md.StepContext = func(pc context.Context, s, in, out any) (bool, any) {
			cancel()
			return inner(pc, s, in, out)
		}
		return md
	})
	if pr.Valid != Unknown || pr.Error == "" {
		t.Fatalf("partition stopped mid-search: %+v", pr)
	}
}

// TestRunOneGrace: a checker that watches its budget hands in its own
// unknown with evidence; one that says true too late is unknown.
func TestRunOneGrace(t *testing.T) {
	cs := []Checker{
		{Name: "polite", Check: func(ctx context.Context, _ Input) Result {
			<-ctx.Done()
			return Result{Valid: Unknown, Error: "ran out", Details: map[string]int{"decided": 3}}
		}},
		{Name: "late-true", Check: func(ctx context.Context, _ Input) Result {
			<-ctx.Done()
			return Result{Valid: Valid}
		}},
	}
	res := runAll(context.Background(), Input{Budget: 1}, []string{"polite", "late-true"}, cs)
	if p := res.Checkers["polite"]; p.Valid != Unknown || p.Error != "ran out" || p.Details == nil {
		t.Errorf("polite = %+v", p)
	}
	if l := res.Checkers["late-true"]; l.Valid != Unknown {
		t.Errorf("late true = %+v", l)
	}
}

// TestCrashInResultsJSON: a crashing checker is unknown with its error in
// results.json.
func TestCrashInResultsJSON(t *testing.T) {
	cs := []Checker{{Name: NameRegister, Check: func(context.Context, Input) Result { panic("model exploded") }}}
	res := runAll(context.Background(), Input{}, []string{NameRegister}, cs)
	path := filepath.Join(t.TempDir(), "results.json")
	if err := WriteResults(path, res); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	r := back.Checkers[NameRegister]
	if back.Valid != Unknown || r.Valid != Unknown || !strings.Contains(r.Error, "model exploded") {
		t.Fatalf("results.json: %+v", back)
	}
}

func TestDefaultGate(t *testing.T) {
	if !slices.Equal(DefaultGate, []string{NameDoubleWriter, NameRegister}) {
		t.Fatalf("default gate %v", DefaultGate)
	}
	if err := ValidateGate([]string{NameMutex, NameRegister}); err != nil {
		t.Fatal(err)
	}
}

type porcupineModel = porcupine.Model

func TestPartitionTimed(t *testing.T) {
	_, d := checkReg(t, register.ModeOff, (&hb{}).section(0, "k", 1, 0, -1).es)
	if d.Keys["k"].ElapsedMS <= 0 {
		t.Fatalf("key time not recorded: %+v", d.Keys["k"])
	}
}
