package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/resource/register"
)

func campaign(service string, timeout time.Duration) worker.Request {
	return worker.Request{F: "campaign", Key: service, TimeoutMS: timeout.Milliseconds()}
}

// TestElection (protocol: "Election"): two candidates of one service. The
// first campaign wins with a term, the second times out within its
// timeout plus the slack; the leader scans and claims a task under its
// term; it resigns, the other wins with a higher term and completes the
// task under it (result id r-TERM-TASK); the deposed one no longer leads,
// and a repeated complete answers ok with the stored result (done).
func TestElection(t *testing.T) {
	forEach(t, candidates, func(t *testing.T, sub subject) {
		service, task := taskTable(t)
		ws := startFor(t, sub, recipes.WorkloadElection, rootOf(t), 2, steadySession)
		a, b := ws[0], ws[1]
		for _, w := range ws {
			if h := w.snapshot()[0]; h.Workload != recipes.WorkloadElection {
				t.Fatalf("%s: hello %+v, want workload %q", w, h, recipes.WorkloadElection)
			}
		}
		ca := a.do(campaign(service, 5*time.Second), 20*time.Second)
		expect(t, "a campaigns", ca, worker.OK)
		ta := tok(t, ca)
		if ca.Node == "" {
			t.Fatalf("campaign ok without node: %+v", ca)
		}
		const timeout = 500 * time.Millisecond
		t0 := time.Now()
		cb := b.do(campaign(service, timeout), 20*time.Second)
		took := time.Since(t0)
		expect(t, "b campaigns while a leads", cb, worker.Fail)
		if !strings.Contains(cb.Error, "timeout") || took < timeout || took > timeout+acquireSlack {
			t.Fatalf("b's campaign failed %q after %s, want timeout between %s and %s", cb.Error, took, timeout, timeout+acquireSlack)
		}
		expect(t, "b claims without leading", b.do(worker.Request{F: "claim", Key: task}, 20*time.Second), worker.Fail)

		sc := a.do(worker.Request{F: "scan", Key: service}, 20*time.Second)
		expect(t, "a scans", sc, worker.OK)
		if sc.Value == nil || *sc.Value != 1 || sc.Token == nil || *sc.Token != ta {
			t.Fatalf("scan %+v: want 1 pending task under term %d", sc, ta)
		}
		cl := a.do(worker.Request{F: "claim", Key: task}, 20*time.Second)
		expect(t, "a claims", cl, worker.OK)
		checkTask(t, "a's claim", cl, ta, register.TaskRunning, "")
		expect(t, "a resigns", a.do(worker.Request{F: "resign", Key: service}, 20*time.Second), worker.OK)

		cb = b.do(campaign(service, 5*time.Second), 20*time.Second)
		expect(t, "b campaigns after a resigned", cb, worker.OK)
		tb := tok(t, cb)
		if tb <= ta {
			t.Fatalf("terms %d then %d: not increasing", ta, tb)
		}
		expect(t, "a claims after resigning", a.do(worker.Request{F: "claim", Key: task}, 20*time.Second), worker.Fail)
		result := fmt.Sprintf("r-%d-%s", tb, task)
		co := b.do(worker.Request{F: "complete", Key: task, WorkMS: 10}, 20*time.Second)
		expect(t, "b completes", co, worker.OK)
		checkTask(t, "b's complete", co, tb, register.TaskSucceeded, result)
		again := b.do(worker.Request{F: "complete", Key: task}, 20*time.Second)
		expect(t, "b completes again (done)", again, worker.OK)
		if again.Accepted == nil || *again.Accepted || again.Digest != result {
			t.Fatalf("repeated complete %+v: want accepted false with the stored result %s", again, result)
		}
		expect(t, "b resigns", b.do(worker.Request{F: "resign", Key: service}, 20*time.Second), worker.OK)
	})
}

// checkTask fails unless a task answer carries the term presented, the
// service's term after it, and the task's state (and result id).
func checkTask(t *testing.T, what string, m worker.Message, term int64, state, digest string) {
	t.Helper()
	if m.Token == nil || *m.Token != term || m.CurrentToken == nil || *m.CurrentToken != term ||
		m.Accepted == nil || !*m.Accepted || m.State != state || m.Digest != digest {
		t.Fatalf("%s: %+v, want term %d, current_token %d, accepted, state %s, digest %q", what, m, term, term, state, digest)
	}
}

// TestElectionDemoted (protocol: "Election events"): a leader stopped
// (SIGSTOP) until the server expires its session loses its node; another
// candidate wins with a higher term meanwhile. Resumed, the old leader
// reports demoted for its term (with a lost reason), no longer claims,
// answers its resign revoked, and, once the other resigns, campaigns
// again and wins with a term higher than both: a candidate demoted by a
// session loss can run again.
func TestElectionDemoted(t *testing.T) {
	forEach(t, candidates, func(t *testing.T, sub subject) {
		service, task := taskTable(t)
		obs := observer(t)
		ws := startFor(t, sub, recipes.WorkloadElection, rootOf(t), 2, expiringSession)
		a, b := ws[0], ws[1]
		ca := a.do(campaign(service, 5*time.Second), 20*time.Second)
		expect(t, "a campaigns", ca, worker.OK)
		ta := tok(t, ca)
		_, _, gone, err := obs.ExistsW(ca.Node)
		if err != nil {
			t.Fatal(err)
		}
		if err := proc.Pause(a.cmd.Process.Pid, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		select {
		case <-gone:
		case <-time.After(15 * time.Second):
			t.Fatal("the server did not expire the stopped leader's session")
		}
		cb := b.do(campaign(service, 10*time.Second), 20*time.Second)
		expect(t, "b campaigns while a is stopped", cb, worker.OK)
		tb := tok(t, cb)
		if tb <= ta {
			t.Fatalf("terms %d then %d: not increasing", ta, tb)
		}
		if err := proc.Resume(a.cmd.Process.Pid, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		_, dm := a.await(20*time.Second, 0, func(m worker.Message) bool { return m.Event == worker.EventDemoted && m.Key == service })
		if dm.Token == nil || *dm.Token != ta || dm.Node != ca.Node || !slices.Contains(worker.LostReasons, dm.State) {
			t.Fatalf("demoted %+v: want term %d, node %s and a lost reason %v", dm, ta, ca.Node, worker.LostReasons)
		}
		t.Logf("demoted: %s", dm.State)
		expect(t, "a claims after its demotion", a.do(worker.Request{F: "claim", Key: task}, 20*time.Second), worker.Fail)
		ra := a.do(worker.Request{F: "resign", Key: service}, 20*time.Second)
		expect(t, "a resigns after its demotion", ra, worker.Fail)
		if !strings.Contains(ra.Error, "revoked") {
			t.Fatalf("resign after demotion: %+v, want revoked", ra)
		}
		cl := b.do(worker.Request{F: "claim", Key: task}, 20*time.Second)
		expect(t, "b claims", cl, worker.OK)
		checkTask(t, "b's claim", cl, tb, register.TaskRunning, "")
		expect(t, "b resigns", b.do(worker.Request{F: "resign", Key: service}, 20*time.Second), worker.OK)
		// a's client reconnects with a new session by itself; its
		// campaign may have to wait for that.
		ca2 := a.do(campaign(service, 10*time.Second), 20*time.Second)
		expect(t, "a campaigns again", ca2, worker.OK)
		if ta2 := tok(t, ca2); ta2 <= tb {
			t.Fatalf("terms %d, %d then %d: not increasing", ta, tb, ta2)
		}
		expect(t, "a resigns", a.do(worker.Request{F: "resign", Key: service}, 20*time.Second), worker.OK)
	})
}

// taskTable creates the test's service (named for it) with one task in
// the register's table.
func taskTable(t *testing.T) (service, task string) {
	t.Helper()
	service = keyOf(t)
	task = service + ":t1"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg := register.NewClient(env.reg, 5*time.Second, regSecret)
	if _, err := reg.InitTasks(ctx, register.InitRequest{Service: service, Tasks: []string{task}}); err != nil {
		t.Fatal(err)
	}
	return service, task
}
