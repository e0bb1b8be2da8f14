package checktest

import (
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// I64 returns a pointer to v.
func I64(v int64) *int64 { return &v }

// Hist builds histories by hand; every event is 10 ns after the previous.
// A negative process is the nemesis.
type Hist struct {
	Events []history.Event
	T      int64
}

// Ev appends one event.
func (b *Hist) Ev(p int, typ history.Type, f, key string, v *history.Value, errText string) *Hist {
	b.T += 10
	proc := history.Process(p)
	if p < 0 {
		proc = history.Nemesis
	}
	b.Events = append(b.Events, history.Event{Index: int64(len(b.Events)), Time: b.T, Process: proc, Type: typ, F: f, Key: key, Value: v, Error: errText})
	return b
}

// Inv appends an invocation without a value.
func (b *Hist) Inv(p int, f, key string) *Hist { return b.Ev(p, history.Invoke, f, key, nil, "") }

// Acquire is an acquire granted with token tok.
func (b *Hist) Acquire(p int, key string, tok int64) *Hist {
	return b.Inv(p, history.FAcquire, key).Acquired(p, key, tok)
}

// Acquired is the ok of an acquire invoked earlier.
func (b *Hist) Acquired(p int, key string, tok int64) *Hist {
	return b.Ev(p, history.OK, history.FAcquire, key, &history.Value{Token: I64(tok)}, "")
}

// Release is a release that answered ok.
func (b *Hist) Release(p int, key string) *Hist {
	return b.Inv(p, history.FRelease, key).Ev(p, history.OK, history.FRelease, key, &history.Value{}, "")
}

// Read is an ok read of n under token tok; wtok < 0 leaves out the
// register's token of the last write (histories from before it was
// recorded).
func (b *Hist) Read(p int, key string, tok, n, wtok int64) *Hist {
	v := &history.Value{Token: I64(tok), N: I64(n)}
	if wtok >= 0 {
		v.Current = I64(wtok)
	}
	return b.Inv(p, history.FRead, key).Ev(p, history.OK, history.FRead, key, v, "")
}

// WriteInv is the invocation of a write of n.
func (b *Hist) WriteInv(p int, key string, n int64) *Hist {
	return b.Ev(p, history.Invoke, history.FWrite, key, &history.Value{N: I64(n)}, "")
}

// Written is the ok of a write of n with token tok.
func (b *Hist) Written(p int, key string, tok, n int64) *Hist {
	return b.Ev(p, history.OK, history.FWrite, key, &history.Value{Token: I64(tok), N: I64(n)}, "")
}

// Write is a write of n with token tok that answered ok.
func (b *Hist) Write(p int, key string, tok, n int64) *Hist {
	return b.WriteInv(p, key, n).Written(p, key, tok, n)
}

// Rejected is the register's rejection of a write of n with token tok,
// the key's fence being fence.
func (b *Hist) Rejected(p int, key string, tok, n, fence int64) *Hist {
	return b.Ev(p, history.Fail, history.FWrite, key, &history.Value{Token: I64(tok), N: I64(n), Current: I64(fence)}, "rejected")
}

// Info is an info completion (a timeout).
func (b *Hist) Info(p int, f, key string) *Hist { return b.Ev(p, history.Info, f, key, nil, "timeout") }

// Instant is an instant operation: invoke and ok.
func (b *Hist) Instant(p int, f, key string, v *history.Value) *Hist {
	return b.Ev(p, history.Invoke, f, key, v, "").Ev(p, history.OK, f, key, v, "")
}

// Section is one clean critical section: acquire, read n, write n+1,
// release.
func (b *Hist) Section(p int, key string, tok, n, prevTok int64) *Hist {
	return b.Acquire(p, key, tok).Read(p, key, tok, n, prevTok).Write(p, key, tok, n+1).Release(p, key)
}

// Timeline builds histories with explicit times in milliseconds.
type Timeline struct{ Events []history.Event }

// Add appends one event at ms; a negative process is the nemesis.
func (b *Timeline) Add(ms int64, p int, typ history.Type, f, key string, v *history.Value, err string) *Timeline {
	proc := history.Process(p)
	if p < 0 {
		proc = history.Nemesis
	}
	b.Events = append(b.Events, history.Event{Index: int64(len(b.Events)), Time: ms * int64(time.Millisecond), Process: proc,
		Type: typ, F: f, Key: key, Value: v, Error: err})
	return b
}

// Op records an invocation at from and its completion at to.
func (b *Timeline) Op(from, to int64, p int, typ history.Type, f, key string, v *history.Value, err string) *Timeline {
	b.Add(from, p, history.Invoke, f, key, nil, "")
	return b.Add(to, p, typ, f, key, v, err)
}

// TokV is a value carrying only a token.
func TokV(t int64) *history.Value { return &history.Value{Token: history.Int64(t)} }

// Section is a healthy critical section of p on key from t (ms).
func (b *Timeline) Section(t int64, p int, key string, token int64) *Timeline {
	b.Op(t, t+1, p, history.OK, history.FAcquire, key, TokV(token), "")
	return b.Op(t+2, t+3, p, history.OK, history.FRelease, key, TokV(token), "")
}

// Log makes apply logs by hand, numbering Seq from 1 as the register
// does.
type Log struct{ Entries []register.Entry }

// Add appends one tokened entry.
func (b *Log) Add(op, key string, token int64, process int, value int64, accepted bool) *Log {
	seq := int64(len(b.Entries) + 1)
	b.Entries = append(b.Entries, register.Entry{Seq: seq, Wall: 1_000_000_000 + seq*1000, Op: op, Key: key,
		Token: token, HasToken: true, Value: value, Process: process, Accepted: accepted, Mode: register.ModeOff})
	return b
}

// W is an accepted write.
func (b *Log) W(key string, token int64, process int, value int64) *Log {
	return b.Add(register.OpWrite, key, token, process, value, true)
}

// RejW is a rejected write.
func (b *Log) RejW(key string, token int64, process int, value int64) *Log {
	return b.Add(register.OpWrite, key, token, process, value, false)
}

// R is an accepted read.
func (b *Log) R(key string, token int64, process int, value int64) *Log {
	return b.Add(register.OpRead, key, token, process, value, true)
}

// RejR is a rejected read.
func (b *Log) RejR(key string, token int64, process int, value int64) *Log {
	return b.Add(register.OpRead, key, token, process, value, false)
}

// OkWrite is a write of n by p that answered ok at `at` (ns).
func OkWrite(p history.Process, key string, token, n int64, at int64) []history.Event {
	return []history.Event{
		{Time: at - 10, Process: p, Type: history.Invoke, F: history.FWrite, Key: key, Value: &history.Value{N: history.Int64(n)}},
		{Time: at, Process: p, Type: history.OK, F: history.FWrite, Key: key, Value: &history.Value{N: history.Int64(n), Token: history.Int64(token)}},
	}
}

// LockHistory is a small run: two workers contend for SKU-1; worker 1 is
// paused by the nemesis while holding the lock, loses it, and its stale
// write lands after worker 2's (fencing off); an older holder's write
// (process 0, retired at once) is rejected. LockLog is its apply log.
func LockHistory() []history.Event {
	tok := history.Int64
	v := func(f func(*history.Value)) *history.Value { x := &history.Value{}; f(x); return x }
	ev := []history.Event{
		{Time: 0, Process: 0, Type: history.Invoke, F: history.FWrite, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(7) })},
		{Time: 1_000_000, Process: 0, Type: history.Info, F: history.FWrite, Key: "SKU-1", Error: "timeout"},
		{Time: 0, Process: 1, Type: history.Invoke, F: history.FAcquire, Key: "SKU-1"},
		{Time: 2_000_000, Process: 1, Type: history.OK, F: history.FAcquire, Key: "SKU-1", Value: v(func(x *history.Value) { x.Token = tok(5); x.Node = "/l/n-5" })},
		{Time: 2_500_000, Process: 2, Type: history.Invoke, F: history.FAcquire, Key: "SKU-1"},
		{Time: 3_000_000, Process: 1, Type: history.Invoke, F: history.FRead, Key: "SKU-1"},
		{Time: 4_000_000, Process: 1, Type: history.OK, F: history.FRead, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(0); x.Token = tok(5) })},
		{Time: 5_000_000, Process: history.Nemesis, Type: history.Invoke, F: history.FPause, Value: v(func(x *history.Value) { x.Target = "worker-1" })},
		{Time: 6_000_000, Process: history.Nemesis, Type: history.OK, F: history.FPause, Value: v(func(x *history.Value) { x.Target = "worker-1"; x.PID = 42; x.Verified = history.Bool(true) })},
		{Time: 7_000_000, Process: 1, Type: history.Invoke, F: history.FWrite, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(1) })},
		// Session event of process 2 while its acquire is in flight.
		{Time: 8_000_000, Process: 2, Type: history.Invoke, F: history.FSession, Value: v(func(x *history.Value) { x.State = "disconnected" })},
		{Time: 8_000_000, Process: 2, Type: history.OK, F: history.FSession, Value: v(func(x *history.Value) { x.State = "disconnected" })},
		{Time: 12_500_000, Process: 2, Type: history.OK, F: history.FAcquire, Key: "SKU-1", Value: v(func(x *history.Value) { x.Token = tok(6) })},
		{Time: 13_000_000, Process: 2, Type: history.Invoke, F: history.FRead, Key: "SKU-1"},
		{Time: 14_000_000, Process: 2, Type: history.OK, F: history.FRead, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(0); x.Token = tok(6) })},
		{Time: 15_000_000, Process: 2, Type: history.Invoke, F: history.FWrite, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(1) })},
		{Time: 16_000_000, Process: 2, Type: history.OK, F: history.FWrite, Key: "SKU-1", Value: v(func(x *history.Value) { x.N = tok(1); x.Token = tok(6) })},
		{Time: 17_000_000, Process: history.Nemesis, Type: history.Invoke, F: history.FResume, Value: v(func(x *history.Value) { x.Target = "worker-1" })},
		// The undo could not be verified: recorded info, as the scheduler does.
		{Time: 18_000_000, Process: history.Nemesis, Type: history.Info, F: history.FResume, Error: "pid 42 still stopped",
			Value: v(func(x *history.Value) { x.Target = "worker-1"; x.PID = 42; x.Verified = history.Bool(false) })},
		{Time: 19_000_000, Process: 1, Type: history.Invoke, F: history.FLost, Key: "SKU-1", Value: v(func(x *history.Value) { x.State = "expired" })},
		{Time: 19_000_000, Process: 1, Type: history.OK, F: history.FLost, Key: "SKU-1", Value: v(func(x *history.Value) { x.State = "expired" })},
		{Time: 20_000_000, Process: 1, Type: history.Info, F: history.FWrite, Key: "SKU-1", Error: "timeout waiting for worker"},
		{Time: 21_000_000, Process: 2, Type: history.Invoke, F: history.FRelease, Key: "SKU-1"},
		{Time: 22_500_000, Process: 2, Type: history.OK, F: history.FRelease, Key: "SKU-1"},
		{Time: 23_000_000, Process: 1, Type: history.Invoke, F: history.FLate, Key: "SKU-1", Value: v(func(x *history.Value) { x.Of = "write" })},
		{Time: 23_000_000, Process: 1, Type: history.OK, F: history.FLate, Key: "SKU-1", Value: v(func(x *history.Value) { x.Of = "write" })},
		// Never completes.
		{Time: 24_000_000, Process: 3, Type: history.Invoke, F: history.FAcquire, Key: "SKU-1"},
		{Time: 25_000_000, Process: 2, Type: history.Invoke, F: history.FAcquire, Key: "SKU-2"},
		{Time: 26_000_000, Process: 2, Type: history.Fail, F: history.FAcquire, Key: "SKU-2", Error: "lock wait timed out"},
	}
	for i := range ev {
		ev[i].Index = int64(i)
	}
	return ev
}

// LockLog is the apply log of LockHistory.
func LockLog() []register.Entry {
	b := &Log{}
	b.R("SKU-1", 5, 1, 0).R("SKU-1", 6, 2, 0).W("SKU-1", 6, 2, 1).W("SKU-1", 5, 1, 1).RejW("SKU-1", 4, 0, 7)
	return b.Entries
}
