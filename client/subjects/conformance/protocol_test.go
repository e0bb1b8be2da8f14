package conformance

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/resource/register"
)

// acquireSlack is how much later than timeout_ms an acquire that cannot be
// granted may be answered on a healthy ensemble (docs/worker-protocol.md,
// "How strictly timeout_ms is kept").
const acquireSlack = time.Second

func isEvent(ev, state string) func(worker.Message) bool {
	return func(m worker.Message) bool { return m.Event == ev && m.State == state }
}

func lostOf(key string) func(worker.Message) bool {
	return func(m worker.Message) bool { return m.Event == worker.EventLost && m.Key == key }
}

// checkLost fails unless m reports the loss of grant g with state why.
func checkLost(t *testing.T, m worker.Message, g worker.Message, why string) {
	t.Helper()
	if m.State != why || m.Node != g.Node || m.Token == nil || *m.Token != *g.Token {
		t.Fatalf("lost event %+v, want state %s for node %s token %d", m, why, g.Node, *g.Token)
	}
}

// TestCloseWhileHolding (protocol: "Closing the session and exit"): stdin
// closes while the worker holds a lock; before it exits it writes the
// session closed, then the lock lost with state closed, and the servers
// have dropped its node.
func TestCloseWhileHolding(t *testing.T) {
	forEach(t, conformant, func(t *testing.T, sub subject) {
		key, root := keyOf(t), rootOf(t)
		obs := observer(t)
		w := start(t, sub, root, 1)[0]
		sess := w.snapshot()[0].Session
		g := w.do(acquire(key, 5*time.Second), 20*time.Second)
		expect(t, "acquire", g, worker.OK)
		w.closeInput()
		if err := w.waitExit(20 * time.Second); err != nil {
			t.Fatalf("exit after stdin closed: %v (want 0)", err)
		}
		lines := w.snapshot()
		iSess, closed, ok := w.find(0, 0, isEvent(worker.EventSession, worker.StateClosed))
		if !ok || closed.Session != sess {
			t.Fatalf("no session closed event for %s before exit:\n%s", sess, w.dump())
		}
		iLost, lost, ok := w.find(0, 0, lostOf(key))
		if !ok {
			t.Fatalf("no lost event for %s before exit:\n%s", key, w.dump())
		}
		checkLost(t, lost, g, worker.StateClosed)
		if iLost < iSess {
			t.Fatalf("lost (line %d) before the session closed event (line %d):\n%s", iLost, iSess, w.dump())
		}
		if n := len(slices.DeleteFunc(lines, func(m worker.Message) bool { return !lostOf(key)(m) })); n != 1 {
			t.Fatalf("%d lost events for %s, want 1:\n%s", n, key, w.dump())
		}
		if q := children(t, obs, root+"/"+key); len(q) != 0 {
			t.Fatalf("queue after exit: %v", q)
		}
	})
}

// TestReleaseAfterConnectionLossThenExpiry (protocol: "Answering a
// release"): the worker is cut off from the server, a release sends its
// delete into the void, the connection is declared lost, the server
// expires the session, and the network heals. The release must answer
// info saying the outcome is unknown, the grant must be reported lost
// (expired), and the worker must go on serving with a new session.
func TestReleaseAfterConnectionLossThenExpiry(t *testing.T) {
	forEach(t, conformant, func(t *testing.T, sub subject) {
		if env.net == nil {
			t.Skip("isolating a worker needs network namespaces (root)")
		}
		key, root := keyOf(t), rootOf(t)
		obs := observer(t)
		w := startFor(t, sub, "", root, 1, expiringSession)[0]
		g := w.do(acquire(key, 5*time.Second), 20*time.Second)
		expect(t, "acquire", g, worker.OK)
		ok, _, gone, err := obs.ExistsW(g.Node)
		if err != nil || !ok {
			t.Fatalf("grant's node %s: exists %v, %v", g.Node, ok, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.host.Block(ctx, env.zkIP); err != nil {
			t.Fatal(err)
		}
		healed := false
		heal := func() {
			if !healed {
				healed = true
				if err := w.host.Heal(context.Background()); err != nil {
					t.Errorf("heal: %v", err)
				}
			}
		}
		defer heal()
		mark := len(w.snapshot())
		id := w.send(release(key))
		// The client notices the silence (ConnectionLoss of the delete in
		// flight), then the server expires the session on its own clock.
		w.await(10*time.Second, mark, isEvent(worker.EventSession, worker.StateDisconnected))
		select {
		case ev := <-gone:
			if ev.Type != zk.EventNodeDeleted {
				t.Fatalf("watch on the grant's node: %+v", ev)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the server did not expire the isolated worker's session")
		}
		t.Logf("server expired the session; healing")
		heal()
		_, rel := w.await(30*time.Second, mark, answerTo(id))
		expect(t, "release after ConnectionLoss and expiry", rel, worker.Info)
		if !strings.Contains(rel.Error, "unknown") {
			t.Fatalf("info release error %q does not say the outcome is unknown", rel.Error)
		}
		t.Logf("release answered info: %s", rel.Error)
		_, lost := w.await(30*time.Second, 0, lostOf(key))
		checkLost(t, lost, g, worker.StateExpired)
		g2 := w.do(acquire(key, 10*time.Second), 30*time.Second)
		expect(t, "acquire after the expiry", g2, worker.OK)
		if tok(t, g2) <= tok(t, g) {
			t.Fatalf("token %d after the expiry, not above %d", *g2.Token, *g.Token)
		}
	})
}

// wakeCase is a subject with the wake-ups each waiter of the test must
// report.
type wakeCase struct {
	sub subject
	// abandon: the subject can time out an acquire (zk-lock cannot: its
	// Lock() goes on, the key stays busy).
	abandon bool
	// want is the wake-ups of the i-th waiter (from 0) in the queue.
	want func(i int) int64
}

// TestWakeupsPerAcquire (protocol: "Wake-ups"): one holder and three
// waiters queued in order on one key. First each waiter abandons an acquire
// (timeout), which leaves a watch on the holder's node; then, twice, the
// lock is passed down the queue. With predecessor watches every grant
// reports exactly one wake-up: its predecessor left. A count of every
// notification would give the first waiters two (the abandoned watch
// fires as the holder releases), a running count would give two in the
// second round. The herd zoo recipe must still count every wake-up it
// gets: the i-th waiter is woken by each of the i+1 releases ahead of it.
func TestWakeupsPerAcquire(t *testing.T) {
	needEnv(t)
	one := func(int) int64 { return 1 }
	cases := []wakeCase{
		{seed, true, one},
		{curator, true, one},
		{kazoo, true, one},
		{subject{"zk-lock", "zk-lock"}, false, one},
		{subject{"herd", "herd"}, true, func(i int) int64 { return int64(i + 1) }},
	}
	for _, c := range cases {
		t.Run(c.sub.name, func(t *testing.T) { skipUnavailable(t, c.sub); wakeups(t, c) })
	}
}

// settle is the time the waiters get to set their watches before the node
// they watch goes away. A test cannot see another session's watches
// without four-letter words (wchp) that the harness's servers need not
// allow, and a waiter that looks after its predecessor left sees it gone
// and is granted without any wake-up, which would make the counts depend
// on scheduling. Setting a watch takes a round trip or two.
const settle = 300 * time.Millisecond

func wakeups(t *testing.T, c wakeCase) {
	const waiters = 3
	key, root := keyOf(t), rootOf(t)
	dir := root + "/" + key
	obs := observer(t)
	ws := start(t, c.sub, root, waiters+1)
	h, ws := ws[0], ws[1:]
	expect(t, "holder's acquire", h.do(acquire(key, 5*time.Second), 20*time.Second), worker.OK)
	if c.abandon {
		for _, w := range ws {
			m := w.do(acquire(key, 300*time.Millisecond), 20*time.Second)
			expect(t, "acquire that times out", m, worker.Fail)
			if m.Wakeups == nil || *m.Wakeups != 0 {
				t.Fatalf("%s: timed-out acquire reports wakeups %v, want 0 (nothing left the queue)", w, m.Wakeups)
			}
		}
	}
	for round := 1; round <= 2; round++ {
		if round > 1 {
			expect(t, "holder's acquire", h.do(acquire(key, 5*time.Second), 20*time.Second), worker.OK)
		}
		ids := make([]int64, waiters)
		for i, w := range ws {
			ids[i] = w.send(acquire(key, 20*time.Second))
			awaitQueue(t, obs, dir, i+2)
		}
		time.Sleep(settle)
		expect(t, "holder's release", h.do(release(key), 20*time.Second), worker.OK)
		for i, w := range ws {
			_, m := w.await(30*time.Second, 0, answerTo(ids[i]))
			expect(t, fmt.Sprintf("round %d waiter %d", round, i), m, worker.OK)
			if m.Wakeups == nil || *m.Wakeups != c.want(i) {
				t.Fatalf("round %d: waiter %d (%s) reports wakeups %v, want %d", round, i, w, ptrStr(m.Wakeups), c.want(i))
			}
			time.Sleep(settle) // the others watch anew (the herd watches this holder now)
			expect(t, "waiter's release", w.do(release(key), 20*time.Second), worker.OK)
		}
		t.Logf("round %d: every waiter reported the expected wake-ups", round)
	}
}

func ptrStr(p *int64) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}

// TestLostReasonsDocumented ties the list of lost reasons in
// docs/worker-protocol.md to the code: the protocol's list, the states the
// Go recipes report, and every reason the Curator worker writes.
func TestLostReasonsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/worker-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### Lost reasons")
	if !ok {
		t.Fatal("docs/worker-protocol.md has no \"Lost reasons\" section")
	}
	section, _, _ = strings.Cut(section, "\n#")
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	if !slices.Equal(slices.Sorted(slices.Values(documented)), slices.Sorted(slices.Values(worker.LostReasons))) {
		t.Fatalf("documented lost reasons %v, protocol's list %v", documented, worker.LostReasons)
	}
	for _, s := range []string{recipes.StateExpired, recipes.StateSessionChanged, recipes.StateClosed} {
		if !slices.Contains(worker.LostReasons, s) {
			t.Errorf("recipes report lost state %q, not a documented reason", s)
		}
	}
	// The election workers' demoted events carry lost reasons too: every
	// string literal in a demote or demotedEvent call's reason, or in the
	// assignment of a reason (why = ...). The election files without one
	// (CuratorElection) pass null, which asks CuratorCandidate.
	lit := regexp.MustCompile(`"([^"]*)"`)
	// The Python election worker's: self.demoted(g, "reason"); the kazoo
	// lock worker's: self.lost_event(g, "reason").
	for file, re := range map[string]string{"../curator/CuratorWorker.java": `lostEvent\([^,]+, ("[^"]+")\)`,
		"../curator/CuratorCandidate.java": `(?:demote|demotedEvent)\(\w+, ([^;]+)\);|why = ([^;]+);`,
		"../curator/CuratorSelector.java":  `(?:demote|demotedEvent)\(\w+, ([^;]+)\);|why = ([^;]+);`,
		"testdata/election_worker.py":      `self\.demoted\(\w+, ("[^"]+")\)`,
		"../kazoo/kazoo_worker.py":         `self\.lost_event\(\w+, ("[^"]+")\)`} {
		java, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(string(java), -1) {
			for _, arg := range m[1:] {
				for _, l := range lit.FindAllStringSubmatch(arg, -1) {
					reasons = append(reasons, l[1])
				}
			}
		}
		t.Logf("%s reports %v", file, reasons)
		if len(reasons) == 0 {
			t.Fatalf("found no reported reason in %s", file)
		}
		for _, reason := range reasons {
			if !slices.Contains(worker.LostReasons, reason) {
				t.Errorf("%s reports lost state %q, not a documented reason", file, reason)
			}
		}
	}
}

// TestLostExpired (protocol: "Lost reasons", expired): a holder stopped
// (SIGSTOP) until the server expires its session reports, once resumed,
// the session expired and the lock lost with state expired; at its exit it
// does not report that lock again, and closes its new session.
func TestLostExpired(t *testing.T) {
	forEach(t, conformant, func(t *testing.T, sub subject) {
		key, root := keyOf(t), rootOf(t)
		obs := observer(t)
		w := startFor(t, sub, "", root, 1, expiringSession)[0]
		g := w.do(acquire(key, 5*time.Second), 20*time.Second)
		expect(t, "acquire", g, worker.OK)
		_, _, gone, err := obs.ExistsW(g.Node)
		if err != nil {
			t.Fatal(err)
		}
		if err := proc.Pause(w.cmd.Process.Pid, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		select {
		case <-gone:
		case <-time.After(15 * time.Second):
			t.Fatal("the server did not expire the stopped worker's session")
		}
		if err := proc.Resume(w.cmd.Process.Pid, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		iExp, _ := w.await(20*time.Second, 0, isEvent(worker.EventSession, worker.StateExpired))
		iLost, lost := w.await(20*time.Second, 0, lostOf(key))
		checkLost(t, lost, g, worker.StateExpired)
		t.Logf("session expired at line %d, lost at line %d", iExp, iLost)
		expect(t, "release of the expired grant", w.do(release(key), 20*time.Second), worker.Fail)
		_, conn := w.await(20*time.Second, iExp, isEvent(worker.EventSession, worker.StateConnected))
		w.closeInput()
		if err := w.waitExit(20 * time.Second); err != nil {
			t.Fatalf("exit: %v", err)
		}
		if _, m, ok := w.find(0, iLost+1, lostOf(key)); ok {
			t.Fatalf("the lock was reported lost again at exit: %+v", m)
		}
		if _, m, ok := w.find(0, 0, isEvent(worker.EventSession, worker.StateClosed)); !ok || m.Session != conn.Session {
			t.Fatalf("no session closed for the new session %s:\n%s", conn.Session, w.dump())
		}
	})
}

// TestReadCurrentToken (protocol: "The register"): a read's current_token
// is the register reply's token, the token of the last accepted write,
// not its fence. One worker writes under its grant; the next holder reads:
// its read raises the fence to its own token, yet current_token must name
// the writer's.
func TestReadCurrentToken(t *testing.T) {
	forEach(t, conformant, func(t *testing.T, sub subject) {
		key, root := keyOf(t), rootOf(t)
		ws := start(t, sub, root, 2)
		a, b := ws[0], ws[1]
		ga := a.do(acquire(key, 5*time.Second), 20*time.Second)
		expect(t, "a acquires", ga, worker.OK)
		v := int64(4242)
		wr := a.do(worker.Request{F: "write", Key: key, Value: &v}, 20*time.Second)
		expect(t, "a writes", wr, worker.OK)
		expect(t, "a releases", a.do(release(key), 20*time.Second), worker.OK)
		gb := b.do(acquire(key, 5*time.Second), 20*time.Second)
		expect(t, "b acquires", gb, worker.OK)
		if tok(t, gb) <= tok(t, ga) {
			t.Fatalf("tokens %d then %d", *ga.Token, *gb.Token)
		}
		rd := b.do(worker.Request{F: "read", Key: key}, 20*time.Second)
		expect(t, "b reads", rd, worker.OK)
		if rd.Value == nil || *rd.Value != v || rd.CurrentToken == nil || rd.Token == nil || *rd.Token != *gb.Token {
			t.Fatalf("read %+v: want value %d read with token %d and a current_token", rd, v, *gb.Token)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := register.NewClient(env.reg, 5*time.Second, regSecret).State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ks, ok := st[key]
		if !ok || ks.Token != *ga.Token || ks.Fence != *gb.Token {
			t.Fatalf("register state of %s: %+v, want token %d (a's write) and fence %d (b's read)", key, ks, *ga.Token, *gb.Token)
		}
		if *rd.CurrentToken != ks.Token {
			t.Fatalf("read current_token %d, want the reply's token %d (the fence is %d)", *rd.CurrentToken, ks.Token, ks.Fence)
		}
	})
}

// TestAcquireTimeoutKept (protocol: "How strictly timeout_ms is kept"): an
// acquire of a held lock answers fail (timeout) no sooner than timeout_ms
// and no later than timeout_ms plus the slack, and leaves no node behind.
func TestAcquireTimeoutKept(t *testing.T) {
	forEach(t, conformant, func(t *testing.T, sub subject) {
		key, root := keyOf(t), rootOf(t)
		obs := observer(t)
		ws := start(t, sub, root, 2)
		h, w := ws[0], ws[1]
		g := h.do(acquire(key, 5*time.Second), 20*time.Second)
		expect(t, "holder acquires", g, worker.OK)
		const timeout = 500 * time.Millisecond
		t0 := time.Now()
		m := w.do(acquire(key, timeout), 20*time.Second)
		took := time.Since(t0)
		expect(t, "acquire of a held lock", m, worker.Fail)
		if !strings.Contains(m.Error, "timeout") {
			t.Fatalf("fail error %q does not say timeout", m.Error)
		}
		t.Logf("MEASURE %s answered a %s acquire after %s", sub.name, timeout, took.Round(time.Millisecond))
		if took < timeout || took > timeout+acquireSlack {
			t.Fatalf("answered after %s, want between %s and %s", took, timeout, timeout+acquireSlack)
		}
		if q := children(t, obs, root+"/"+key); len(q) != 1 || root+"/"+key+"/"+q[0] != g.Node {
			t.Fatalf("queue %v after the timeout, want only the holder's %s", q, g.Node)
		}
	})
}
