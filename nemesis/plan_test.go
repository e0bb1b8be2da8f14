package nemesis

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
)

func TestEveryFaultHasASelector(t *testing.T) {
	for _, n := range Names()[2:] {
		if sel, ok := Selector(n); !ok || sel == "" {
			t.Errorf("fault %s has no selector (selects in its init)", n)
		}
	}
	if _, ok := Selector("no-such-fault"); ok {
		t.Error("an unregistered name is known")
	}
}

func TestParsePlan(t *testing.T) {
	sel, _ := Selector("pause-holder")
	text := `{"offset":"1.5s","fault":"pause-holder","hold":"2s"}

{"offset":"1.5s","fault":"kill-zk","selector":"` + anyServer + `","hold":"500ms","outcome":"ok","target":"n2 (pid 7, 127.0.0.1:2182)","pid":7}
{"offset":"4s","fault":"pause-holder","selector":"` + sel + `","hold":"0s","outcome":"fail","error":"no target"}
`
	p, err := ParsePlan(strings.NewReader(text), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 3 || p.Entries[0].Offset != Duration(1500*time.Millisecond) || p.Entries[1].Fault != "kill-zk" ||
		p.Entries[1].Hold != Duration(500*time.Millisecond) || p.Entries[1].PID != 7 || p.Entries[2].Outcome != "fail" {
		t.Fatalf("parsed %+v", p.Entries)
	}
	if got := strings.Join(p.Faults(), ","); got != "kill-zk,pause-holder" {
		t.Errorf("faults %s", got)
	}
	empty, err := ParsePlan(strings.NewReader("\n\n"), "e.json")
	if err != nil || len(empty.Entries) != 0 || strings.Join(empty.Faults(), ",") != "none" {
		t.Errorf("empty schedule: %+v, %v; want no entries, faults none", empty, err)
	}
}

// TestParsePlanRefuses: each kind of bad line is refused, naming the
// file, the line and the problem.
func TestParsePlanRefuses(t *testing.T) {
	good := `{"offset":"1s","fault":"pause-holder","hold":"2s"}` + "\n"
	for _, tc := range []struct{ name, line, want string }{
		{"not JSON", `{"offset":"1s","fault":`, "not a schedule entry"},
		{"two values", `{"offset":"3s","fault":"kill-zk","hold":"1s"} {}`, "more than one JSON value"},
		{"unknown field", `{"ofset":"3s","fault":"kill-zk","hold":"1s"}`, `unknown field "ofset"`},
		{"number for a duration", `{"offset":3,"fault":"kill-zk","hold":"1s"}`, `a duration is a string`},
		{"bad duration", `{"offset":"3 s","fault":"kill-zk","hold":"1s"}`, `duration "3 s"`},
		{"no fault", `{"offset":"3s","hold":"1s"}`, "no fault"},
		{"unknown fault", `{"offset":"3s","fault":"pause-hodler","hold":"1s"}`, `unknown fault "pause-hodler"`},
		{"all is not a fault", `{"offset":"3s","fault":"all","hold":"1s"}`, `unknown fault "all"`},
		{"another selector", `{"offset":"3s","fault":"kill-zk","selector":"the leader","hold":"1s"}`, `selects "` + anyServer + `", not "the leader"`},
		{"negative hold", `{"offset":"3s","fault":"kill-zk","hold":"-1s"}`, "may be negative"},
		{"out of order", `{"offset":"500ms","fault":"kill-zk","hold":"1s"}`, "offsets out of order: 500ms comes after 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePlan(strings.NewReader(good+"\n"+tc.line+"\n"+good), "bad.json")
			if err == nil || !strings.HasPrefix(err.Error(), "schedule bad.json line 3: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v; want %q on line 3", err, tc.want)
			}
		})
	}
}

// TestPlanLogRoundTrip: what a run records reads back as a schedule to
// follow, with what each entry hit.
func TestPlanLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schedule.json")
	l, err := CreatePlanLog(path, true)
	if err != nil {
		t.Fatal(err)
	}
	v := history.Value{Target: "process 3 (pid 30) holding SKU-1", PID: 30, TargetProcess: history.Int(3)}
	for _, e := range []Entry{
		entryOf("pause-holder", 1234567*time.Microsecond, 2*time.Second, history.OK, v, ""),
		entryOf("pause-holder", 5*time.Second, 2*time.Second, history.Fail, history.Value{Target: "pause-holder"}, "no target"),
	} {
		if err := l.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"offset":"1.235s"`) || !strings.Contains(string(b), `"hold":"2s"`) {
		t.Errorf("schedule.json:\n%s\nwant offsets rounded to the millisecond, durations as strings", b)
	}
	p, err := ReadPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := Selector("pause-holder")
	if len(p.Entries) != 2 || p.Entries[0].Selector != sel || p.Entries[0].Target != v.Target ||
		*p.Entries[0].TargetProcess != 3 || p.Entries[1].Outcome != "fail" || p.Entries[1].Error != "no target" {
		t.Errorf("read back %+v", p.Entries)
	}
}

// entries collects a scheduler's schedule log.
type entries struct {
	mu sync.Mutex
	es []Entry
}

func (l *entries) Add(e Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.es = append(l.es, e)
	return nil
}

func (l *entries) all() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Entry(nil), l.es...)
}

// TestFollowRunsTheEntries: a followed schedule injects exactly its
// entries, in order, at their offsets from the origin (not from the
// scheduler's start), each for its hold, and logs each as it goes.
func TestFollowRunsTheEntries(t *testing.T) {
	var u0, u1 undoCounter
	f0 := &fakeFault{start: "pause", stop: "resume", inject: func(context.Context, *Env) (*Effect, error) { return u0.effect(), nil }}
	f1 := &fakeFault{start: "kill", stop: "restart", inject: func(context.Context, *Env) (*Effect, error) { return u1.effect(), nil }}
	plan := &Plan{Entries: []Entry{
		{Offset: Duration(100 * time.Millisecond), Fault: "f1", Hold: Duration(50 * time.Millisecond)},
		{Offset: Duration(300 * time.Millisecond), Fault: "f1", Hold: Duration(10 * time.Millisecond)},
		{Offset: Duration(400 * time.Millisecond), Fault: "f0", Hold: Duration(80 * time.Millisecond)},
	}}
	h := history.NewMemory()
	origin, log := NewOrigin(), &entries{}
	s, err := newScheduler(Config{History: h, Follow: plan, Origin: origin, Log: log,
		Env: Env{Rand: rand.New(rand.NewPCG(1, 1))}}, []string{"f0", "f1"}, []Fault{f0, f1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	time.Sleep(150 * time.Millisecond) // the scheduler waits for the origin
	marked := time.Now()
	origin.Mark()
	waitFor(t, func() bool { return u0.n.Load() == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ops := nemesisOps(h)
	var starts []history.Event
	for _, e := range ops {
		if e.Type == history.OK && (e.F == "pause" || e.F == "kill") {
			starts = append(starts, e)
		}
	}
	if len(starts) != 3 || starts[0].F != "kill" || starts[1].F != "kill" || starts[2].F != "pause" || u1.n.Load() != 2 {
		t.Fatalf("want kill, kill, pause, each undone:%s", opsText(ops))
	}
	got := log.all()
	if len(got) != 3 {
		t.Fatalf("logged %+v", got)
	}
	for i, e := range got {
		want := plan.Entries[i]
		if e.Fault != want.Fault || e.Hold != want.Hold || e.Outcome != "ok" || e.Target != "process 7 (pid 70)" {
			t.Errorf("entry %d logged %+v; want %s held %s, ok on its target", i, e, want.Fault, time.Duration(want.Hold))
		}
		if d := time.Duration(e.Offset - want.Offset); d < 0 || d > 100*time.Millisecond {
			t.Errorf("entry %d at %s; planned %s from the origin", i, time.Duration(e.Offset), time.Duration(want.Offset))
		}
	}
	if first := time.Since(marked); first < 480*time.Millisecond {
		t.Errorf("the last entry's hold ended %s after the origin; planned 480ms", first)
	}
}

// TestFollowLeavesOutWhatTheRunCannotHold: an entry after the first
// whose hold would outlast the workload is left out, with the rest.
func TestFollowLeavesOutWhatTheRunCannotHold(t *testing.T) {
	log, u := followTwo(t, 50*time.Millisecond, time.Hour, nil)
	if n := len(log.all()); n != 1 || u.n.Load() != 1 {
		t.Errorf("%d entries run, %d undone; want the first only", n, u.n.Load())
	}
}

// TestFollowedOnceTheLastIsUndone: Followed is called once, after the
// last entry is undone, while the workload still runs; a schedule whose
// last entry was left out never calls it.
func TestFollowedOnceTheLastIsUndone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lastHold time.Duration
		want     int32
	}{{"every entry run", 20 * time.Millisecond, 1}, {"the last left out", time.Hour, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			var followed, undoneAtCall atomic.Int32
			followTwo(t, 30*time.Millisecond, tc.lastHold, func(undone int32) {
				undoneAtCall.Store(undone)
				followed.Add(1)
			})
			if got := followed.Load(); got != tc.want {
				t.Fatalf("Followed called %d times, want %d", got, tc.want)
			}
			if tc.want == 1 && undoneAtCall.Load() != 2 {
				t.Errorf("Followed called with %d entries undone, want both", undoneAtCall.Load())
			}
		})
	}
}

// followTwo follows a schedule of two entries of one fault, the first at
// once held 10 ms, the second gap later held lastHold, in a workload of
// 300 ms, and returns what it logged and what it undid. followed, when
// set, is Config.Followed, told how many entries were undone by then.
func followTwo(t *testing.T, gap, lastHold time.Duration, followed func(undone int32)) (*entries, *undoCounter) {
	t.Helper()
	u := &undoCounter{}
	f0 := &fakeFault{start: "pause", stop: "resume", inject: func(context.Context, *Env) (*Effect, error) { return u.effect(), nil }}
	plan := &Plan{Entries: []Entry{
		{Offset: 0, Fault: "f0", Hold: Duration(10 * time.Millisecond)},
		{Offset: Duration(gap), Fault: "f0", Hold: Duration(lastHold)},
	}}
	log := &entries{}
	cfg := Config{History: history.NewMemory(), Follow: plan, Log: log, Env: Env{Rand: rand.New(rand.NewPCG(1, 1))}}
	if followed != nil {
		cfg.Followed = func() { followed(u.n.Load()) }
	}
	s, err := newScheduler(cfg, []string{"f0"}, []Fault{f0})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return log, u
}

// TestDrawnFaultsAreLogged: a run that draws its faults records each as
// an entry, offset from the origin, with the schedule's hold and what the
// injection hit or why it hit nothing.
func TestDrawnFaultsAreLogged(t *testing.T) {
	n := 0
	f := &fakeFault{start: "pause", stop: "resume", inject: func(context.Context, *Env) (*Effect, error) {
		n++
		if n == 1 {
			return nil, ErrNoTarget
		}
		return (&undoCounter{}).effect(), nil
	}}
	origin, log := NewOrigin(), &entries{}
	origin.Mark()
	h := history.NewMemory()
	s, err := newScheduler(Config{Schedule: Schedule{First: 20 * time.Millisecond, Quiet: 20 * time.Millisecond, Hold: 30 * time.Millisecond},
		History: h, Origin: origin, Log: log, Env: Env{Rand: rand.New(rand.NewPCG(1, 1))}}, []string{"f0"}, []Fault{f})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	waitFor(t, func() bool { return len(log.all()) >= 2 })
	cancel()
	<-done
	got := log.all()
	if got[0].Outcome != "fail" || !strings.Contains(got[0].Error, "no target") || got[1].Outcome != "ok" ||
		got[1].Hold != Duration(30*time.Millisecond) || got[1].Offset < got[0].Offset || got[0].Offset < Duration(20*time.Millisecond) {
		t.Errorf("logged %+v", got)
	}
	p := &Plan{}
	for i, e := range got {
		e.Fault = "pause-holder" // the fakes' names are not registered
		e.Selector = ""
		if err := p.check(e); err != nil {
			t.Errorf("entry %d as logged does not read back: %v", i, err)
		}
		p.Entries = append(p.Entries, e)
	}
}
