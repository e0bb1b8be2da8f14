package checktest

import (
	"fmt"
	"math/rand/v2"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Service is the election workload's service in the tests.
const Service = "billing"

// TaskKey is the key of task i, as the workload names it.
func TaskKey(i int) string { return fmt.Sprintf("billing:2026-11-30:t%d", i) }

// Task states of the register's task table.
const (
	TaskPending   = "PENDING"
	TaskRunning   = "RUNNING"
	TaskSucceeded = "SUCCEEDED"
)

// Init appends the init entry of task (service Service).
func (b *Log) Init(task string) *Log {
	seq := int64(len(b.Entries) + 1)
	b.Entries = append(b.Entries, register.Entry{Seq: seq, Wall: 1_000_000_000 + seq*1000, Op: "init", Service: Service,
		Task: task, Token: register.NoToken, Accepted: true, StateAfter: TaskPending, Mode: register.ModeOn})
	return b
}

// InitTable appends an init entry as the register writes it: the tasks
// presented listed in Tasks (a table's first chunk, or one it grew by).
func (b *Log) InitTable(tasks ...string) *Log {
	seq := int64(len(b.Entries) + 1)
	b.Entries = append(b.Entries, register.Entry{Seq: seq, Wall: 1_000_000_000 + seq*1000, Op: "init", Service: Service,
		Tasks: tasks, Token: register.NoToken, Accepted: true, Mode: register.ModeOn})
	return b
}

// Task appends a claim or complete of task by process p with term; exec
// is the task's executions after it.
func (b *Log) Task(op, task string, term int64, p int, accepted bool, reason string, exec int) *Log {
	seq := int64(len(b.Entries) + 1)
	b.Entries = append(b.Entries, register.Entry{Seq: seq, Wall: 1_000_000_000 + seq*1000, Op: op, Service: Service,
		Task: task, Token: term, HasToken: true, Process: p, Accepted: accepted, Reason: reason, Executions: int64(exec),
		Mode: register.ModeOn})
	return b
}

// ElectionSpec describes a simulated election run: leaders in turn, each
// scanning the task table and running a batch of tasks, then resigning
// or being demoted (session expired), until every task succeeded.
type ElectionSpec struct {
	Seed       uint64
	Candidates int
	Tasks      int
	Batch      int // tasks per leadership
	// LostReplyShare is the chance that a complete is committed and its
	// reply dropped; the worker retries it.
	LostReplyShare float64
	Fencing        bool
	Idempotency    bool
	// Duplicate drops the reply of the first complete of the run, whatever
	// LostReplyShare says; without idempotency the retry runs it again.
	Duplicate bool
	// StaleWrite makes the first leader that is demoted send its last
	// complete late: it reaches the register after the next leader's first
	// claim (accepted only without fencing).
	StaleWrite bool
}

type simTask struct {
	state, result string
	exec          int
}

// elSim is a correct register's task table and the workers' history.
type elSim struct {
	s       ElectionSpec
	r       *rand.Rand
	t       int64
	evs     []history.Event
	log     []register.Entry
	term    int64 // the service term accepted
	tasks   []*simTask
	dropped bool
}

func (m *elSim) add(p int, typ history.Type, f, key string, v *history.Value, errText string) {
	m.t += 1 + m.r.Int64N(1_000_000)
	m.evs = append(m.evs, history.Event{Index: int64(len(m.evs)), Time: m.t, Process: history.Process(p), Type: typ, F: f,
		Key: key, Value: v, Error: errText})
}

func (m *elSim) instant(p int, f string, v *history.Value) {
	m.add(p, history.Invoke, f, "", v, "")
	m.evs = append(m.evs, history.Event{Index: int64(len(m.evs)), Time: m.t, Process: history.Process(p), Type: history.OK, F: f, Value: v})
}

func (m *elSim) mode() string {
	if m.s.Fencing {
		return register.ModeOn
	}
	return register.ModeOff
}

// call applies a claim or complete as ELECTION.md says the register does
// and logs it; it returns the register's answer.
func (m *elSim) call(op string, i int, term int64, p int, result string, dropped bool) (bool, string, string) {
	tk := m.tasks[i]
	e := register.Entry{Seq: int64(len(m.log) + 1), Wall: 1_000_000_000 + m.t, Op: op, Service: Service, Task: TaskKey(i + 1),
		Token: term, HasToken: true, Process: p, Result: result, Mode: m.mode(), ReplyDropped: dropped}
	switch {
	case m.s.Fencing && term < m.term:
		e.Reason = "stale term"
	case m.s.Idempotency && tk.state == TaskSucceeded:
		m.term = max(m.term, term)
		e.Reason, e.Result = "done", tk.result
	default:
		m.term = max(m.term, term)
		e.Accepted = true
		tk.state = TaskRunning
		if op == "complete" {
			tk.state, tk.result = TaskSucceeded, result
			tk.exec++
		}
	}
	e.StateAfter, e.Executions = tk.state, int64(tk.exec)
	m.log = append(m.log, e)
	return e.Accepted, e.Reason, tk.result
}

// GenElection simulates a correct election run (see ElectionSpec) and
// returns its history and apply log.
func GenElection(s ElectionSpec) ([]history.Event, []register.Entry) {
	m := &elSim{s: s, r: rand.New(rand.NewPCG(s.Seed, 0xe1ec)), term: register.NoToken}
	for i := range s.Tasks {
		m.tasks = append(m.tasks, &simTask{state: TaskPending})
		m.log = append(m.log, register.Entry{Seq: int64(i + 1), Wall: 1_000_000_000, Op: "init", Service: Service,
			Task: TaskKey(i + 1), Token: register.NoToken, Accepted: true, StateAfter: TaskPending, Mode: m.mode()})
	}
	for p := range s.Candidates {
		m.add(p, history.Invoke, history.FCampaign, Service, nil, "")
	}
	zxid := int64(0x100000000)
	type staleCall struct {
		p    int
		i    int
		term int64
	}
	var stale *staleCall
	for k := 0; !m.allDone(); k++ {
		p := k % s.Candidates
		zxid += 1 + m.r.Int64N(1000)
		term := zxid
		m.add(p, history.OK, history.FCampaign, Service, &history.Value{Token: history.Int64(term),
			Node: fmt.Sprintf("/leaders/%s/n-%010d", Service, k), Session: fmt.Sprintf("0x%x", 0x1000+k)}, "")
		todo := m.scan(p)
		for n, i := range todo[:min(len(todo), s.Batch)] {
			claimed := m.claim(p, i, term)
			if stale != nil && n == 0 {
				// The deposed leader's late complete lands now.
				m.complete(stale.p, stale.i, stale.term, false)
				m.add(stale.p, history.Invoke, history.FCampaign, Service, nil, "")
				stale = nil
			}
			if !claimed {
				continue
			}
			if m.s.StaleWrite && k > 0 && n == min(len(todo), s.Batch)-1 {
				// Invoked, then demoted while the call is in flight.
				m.add(p, history.Invoke, history.FComplete, TaskKey(i+1), &history.Value{Token: history.Int64(term), Digest: result(i, term)}, "")
				m.instant(p, history.FSession, &history.Value{State: "expired", Session: fmt.Sprintf("0x%x", 0x1000+k)})
				m.instant(p, history.FDemoted, &history.Value{Token: history.Int64(term), State: "expired"})
				stale = &staleCall{p: p, i: i, term: term}
				m.s.StaleWrite = false // once
				break
			}
			m.completeWithRetry(p, i, term)
		}
		if stale != nil && stale.p == p {
			continue
		}
		m.endLeadership(p, term, k)
	}
	return m.evs, m.log
}

func (m *elSim) allDone() bool {
	for _, t := range m.tasks {
		if t.state != TaskSucceeded {
			return false
		}
	}
	return true
}

// scan is a new leader's scan; it returns the tasks not done.
func (m *elSim) scan(p int) []int {
	m.add(p, history.Invoke, history.FScan, Service, nil, "")
	var todo []int
	for i, t := range m.tasks {
		if t.state != TaskSucceeded {
			todo = append(todo, i)
		}
	}
	m.add(p, history.OK, history.FScan, Service, &history.Value{N: history.Int64(int64(len(todo)))}, "")
	return todo
}

func result(i int, term int64) string { return fmt.Sprintf("r%d-%x", i+1, term) }

// claim claims task i; false when the register refused (done already).
func (m *elSim) claim(p, i int, term int64) bool {
	key := TaskKey(i + 1)
	m.add(p, history.Invoke, history.FClaim, key, &history.Value{Token: history.Int64(term)}, "")
	ok, reason, res := m.call("claim", i, term, p, "", false)
	v := &history.Value{Token: history.Int64(term), Current: history.Int64(m.term), State: m.tasks[i].state, Digest: res}
	if !ok {
		m.add(p, history.Fail, history.FClaim, key, v, reason)
		return false
	}
	m.add(p, history.OK, history.FClaim, key, v, "")
	return true
}

// completeWithRetry completes task i; a dropped reply is retried once.
func (m *elSim) completeWithRetry(p, i int, term int64) {
	m.add(p, history.Invoke, history.FComplete, TaskKey(i+1), &history.Value{Token: history.Int64(term), Digest: result(i, term)}, "")
	drop := m.r.Float64() < m.s.LostReplyShare || (m.s.Duplicate && !m.dropped)
	if drop {
		m.dropped = true
		m.call("complete", i, term, p, result(i, term), true)
	}
	m.complete(p, i, term, false)
}

// complete sends the complete of an invoked call and records the answer.
func (m *elSim) complete(p, i int, term int64, dropped bool) {
	key := TaskKey(i + 1)
	ok, reason, res := m.call("complete", i, term, p, result(i, term), dropped)
	v := &history.Value{Token: history.Int64(term), Current: history.Int64(m.term), State: m.tasks[i].state, Digest: res}
	if !ok {
		m.add(p, history.Fail, history.FComplete, key, v, reason)
		return
	}
	m.add(p, history.OK, history.FComplete, key, v, "")
}

// endLeadership resigns or loses the session (demoted), then campaigns
// again.
func (m *elSim) endLeadership(p int, term int64, k int) {
	if m.allDone() {
		return
	}
	if m.r.IntN(2) == 0 {
		m.add(p, history.Invoke, history.FResign, Service, nil, "")
		m.add(p, history.OK, history.FResign, Service, &history.Value{Token: history.Int64(term)}, "")
	} else {
		m.instant(p, history.FSession, &history.Value{State: "expired", Session: fmt.Sprintf("0x%x", 0x1000+k)})
		m.instant(p, history.FDemoted, &history.Value{Token: history.Int64(term), State: "expired"})
	}
	m.add(p, history.Invoke, history.FCampaign, Service, nil, "")
}
