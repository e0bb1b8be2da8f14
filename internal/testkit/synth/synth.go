// Package synth makes large lock-workload runs without an ensemble: a
// history and an apply log shaped like a real `chaos run` (workers
// acquiring, reading, writing and releasing keys; session events;
// pause-holder faults whose late writes land as double writes, or are
// refused under fencing), written with the real encoders into a run
// folder that `chaos check` reads. It exists for the size and speed
// bounds of the report (a 60 s real run has about 3 800 operations; the
// report must hold at 100 000), which no real run in a test's time
// reaches. It is a test and benchmark helper: nothing in a run uses it.
package synth

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Spec is what to generate. Zero fields take the defaults of `chaos run`
// (6 workers, 3 keys, hold 100 ms, think 20 ms, a pause-holder fault
// after every 4 s of quiet, held 6 s, session timeout 3 s, operation
// timeout 2 s, fencing off).
type Spec struct {
	// Ops is how many worker operations (acquire, read, write, release,
	// final-read invocations) the history holds, at least; required.
	Ops     int
	Keys    int
	Workers int
	Hold    time.Duration
	Think   time.Duration
	// FaultEvery is the quiet time before each pause-holder fault; a
	// negative value means no faults.
	FaultEvery     time.Duration
	Pause          time.Duration
	SessionTimeout time.Duration
	OpTimeout      time.Duration
	// AcquireTimeout is how long an acquire waits before it fails.
	AcquireTimeout time.Duration
	// Fencing is the register's mode: off lets every paused holder's
	// late write land (a double write per fault), on refuses it.
	Fencing string
	// FailEvery makes every n-th acquire fail at once (a refused
	// connection), 0 for the default 200, negative for none.
	FailEvery int
	Seed      uint64
	// StartWall is the run's start (Unix ns); 0 takes a fixed date, so
	// that the same Spec gives the same files.
	StartWall int64
}

// Run is a generated run: the history in index order, the apply log in
// seq order, and the run clock's origin on the wall clock.
type Run struct {
	Spec      Spec
	Events    []history.Event
	ApplyLog  []register.Entry
	StartWall int64
	// WorkloadNS is when the workload ended (the last operation's
	// completion); Faults how many pause-holder faults it holds.
	WorkloadNS int64
	Faults     int
}

// Ops counts the worker operations (invocations of non-instant,
// non-nemesis operations) of a history, the unit Spec.Ops is in.
func Ops(h []history.Event) int {
	n := 0
	for _, e := range h {
		if e.Type == history.Invoke && e.Process != history.Nemesis && !isInstant(e.F) {
			n++
		}
	}
	return n
}

func isInstant(f string) bool {
	return f == history.FSession || f == history.FLost || f == history.FLate
}

func (s Spec) withDefaults() (Spec, error) {
	if s.Ops <= 0 {
		return s, errors.New("synth: Spec.Ops must be positive")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if s.Keys <= 0 {
		s.Keys = 3
	}
	if s.Workers <= 0 {
		s.Workers = 6
	}
	def(&s.Hold, 100*time.Millisecond)
	def(&s.Think, 20*time.Millisecond)
	def(&s.FaultEvery, 4*time.Second)
	def(&s.SessionTimeout, 3*time.Second)
	def(&s.Pause, 2*s.SessionTimeout)
	def(&s.OpTimeout, 2*time.Second)
	def(&s.AcquireTimeout, 5*time.Second)
	if s.Fencing == "" {
		s.Fencing = register.ModeOff
	}
	if s.Fencing != register.ModeOff && s.Fencing != register.ModeOn {
		return s, fmt.Errorf("synth: fencing %q: want off or on", s.Fencing)
	}
	if s.FailEvery == 0 {
		s.FailEvery = 200
	}
	if s.StartWall == 0 {
		s.StartWall = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	}
	return s, nil
}

// Generate simulates the run: each worker slot in turn (the one whose
// clock is earliest) takes a random key's lock, reads, holds and writes,
// and releases; a key's lock is granted in request order. The register's
// calls are then committed in time order by register.Decide and
// register.ApplyEntry, which fills the values the history's reads and
// writes carry, and the events are indexed in time order as the history
// writer does.
func Generate(spec Spec) (Run, error) {
	s, err := spec.withDefaults()
	if err != nil {
		return Run{}, err
	}
	g := newGen(s)
	for g.ops < s.Ops {
		g.step()
	}
	g.finish()
	log, err := g.commit()
	if err != nil {
		return Run{}, err
	}
	slices.SortStableFunc(g.events, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	for i := range g.events {
		g.events[i].Index = int64(i)
	}
	return Run{Spec: s, Events: g.events, ApplyLog: log, StartWall: s.StartWall, WorkloadNS: g.workloadEnd, Faults: g.faults}, nil
}

// gen is the simulation's state.
type gen struct {
	s        Spec
	rng      *rand.Rand
	events   []history.Event
	calls    []call
	slots    []*slot
	keyFree  []int64 // when each key's lock is next free
	keyNodes []int   // each key's next sequential node number
	token    int64
	nextProc int
	ops      int
	acquires int
	// nextFault is when the next fault may start (-1: none); faults
	// counts them.
	nextFault   int64
	faults      int
	workloadEnd int64
}

// slot is one worker position: the process in it and its clock.
type slot struct {
	proc    int
	session string
	at      int64
}

// call is one register call; fill, run when it commits, puts the
// register's answer into the history's events.
type call struct {
	at       int64
	op, key  string
	token    int64
	hasToken bool
	process  int
	value    func() int64 // a write's value, known only once its read committed
	fill     func(register.Entry, register.KeyState)
}

// setupNS is when the workers start on the run's clock (a real run
// spends about 2.8 s on the ensemble first).
const setupNS = 2_800_000_000

func newGen(s Spec) *gen {
	g := &gen{s: s, rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x5eed)), keyFree: make([]int64, s.Keys),
		keyNodes: make([]int, s.Keys), token: 4_294_967_300, nextFault: -1}
	if s.FaultEvery > 0 {
		g.nextFault = setupNS + int64(s.FaultEvery)
	}
	for range s.Workers {
		sl := &slot{}
		g.spawn(sl, setupNS+g.jitter(10))
		g.slots = append(g.slots, sl)
	}
	return g
}

// jitter is a random duration in [0, ms) milliseconds, in ns.
func (g *gen) jitter(ms int) int64 { return g.rng.Int64N(int64(ms) * 1e6) }

// key is the name of key k (0-based), as chaos run names them.
func key(k int) string { return fmt.Sprintf("SKU-%d", k+1) }

// pid is a process's synthetic OS pid.
func pid(p int) int { return 20000 + p }

// spawn puts a fresh process in sl at t, which announces its session.
func (g *gen) spawn(sl *slot, t int64) {
	sl.proc = g.nextProc
	g.nextProc++
	sl.session = fmt.Sprintf("0x%x", 0x2000005_3cdd0000+sl.proc)
	sl.at = t
	g.instant(t, sl.proc, history.FSession, "", &history.Value{Session: sl.session, State: "connected", PID: pid(sl.proc)})
}

// op records an operation's invocation and completion.
func (g *gen) op(p int, f, k string, inv, done int64, typ history.Type, in, out *history.Value, errText string) {
	g.events = append(g.events,
		history.Event{Time: inv, Process: history.Process(p), Type: history.Invoke, F: f, Key: k, Value: in},
		history.Event{Time: done, Process: history.Process(p), Type: typ, F: f, Key: k, Value: out, Error: errText})
	g.ops++
}

// instant records an instant event (invocation and ok at one instant).
func (g *gen) instant(t int64, p int, f, k string, v *history.Value) {
	g.events = append(g.events,
		history.Event{Time: t, Process: history.Process(p), Type: history.Invoke, F: f, Key: k, Value: v},
		history.Event{Time: t + 5000, Process: history.Process(p), Type: history.OK, F: f, Key: k, Value: v})
}

// nemesis records a nemesis operation: in is the invocation's value,
// out the completion's.
func (g *gen) nemesis(f string, inv, done int64, in, out *history.Value) {
	g.events = append(g.events,
		history.Event{Time: inv, Process: history.Nemesis, Type: history.Invoke, F: f, Value: in},
		history.Event{Time: done, Process: history.Nemesis, Type: history.OK, F: f, Value: out})
}
