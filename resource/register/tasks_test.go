package register

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
)

const svc = "billing"

// startTasks runs a register in the given modes with the tasks t1..tn of
// svc initialised (seq 1).
func startTasks(t *testing.T, path, mode, idem string, n int) *running {
	t.Helper()
	r := startCfg(t, Config{LogPath: path, Mode: mode, Idempotency: idem})
	tasks := make([]string, n)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("t%d", i+1)
	}
	rep, err := r.c.InitTasks(context.Background(), InitRequest{Service: svc, Tasks: tasks})
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	if rep.Added != n || rep.Tasks != n || rep.Seq != 1 {
		t.Fatalf("init reply %+v", rep)
	}
	return r
}

func (r *running) claim(t *testing.T, task string, term int64) TaskReply {
	t.Helper()
	rep, err := r.c.Claim(context.Background(), TaskRequest{Service: svc, Task: task, Term: term, Process: 3, PID: 77})
	if err != nil {
		t.Fatalf("claim %s term %d: %v", task, term, err)
	}
	return rep
}

func (r *running) complete(t *testing.T, task string, term int64, result string) TaskReply {
	t.Helper()
	rep, err := r.c.Complete(context.Background(), TaskRequest{Service: svc, Task: task, Term: term, Process: 3, Result: result})
	if err != nil {
		t.Fatalf("complete %s term %d: %v", task, term, err)
	}
	return rep
}

func (r *running) scan(t *testing.T) ScanReply {
	t.Helper()
	rep, err := r.c.Scan(context.Background(), svc)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	return rep
}

func (r *running) entries(t *testing.T) []Entry {
	t.Helper()
	es, err := ReadApplyLog(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// want checks a task reply against the expected outcome.
func want(t *testing.T, what string, rep TaskReply, accepted bool, reason, state string, term, executions int64, result string) {
	t.Helper()
	got := TaskReply{Accepted: rep.Accepted, Reason: rep.Reason, State: rep.State, Term: rep.Term, Result: rep.Result, Executions: rep.Executions}
	exp := TaskReply{Accepted: accepted, Reason: reason, State: state, Term: term, Result: result, Executions: executions}
	if got != exp {
		t.Errorf("%s: got %+v, want %+v", what, got, exp)
	}
}

func TestTaskFencingRefusesLowerTerm(t *testing.T) {
	for _, mode := range []string{ModeOn, ModeStrict} {
		t.Run(mode, func(t *testing.T) {
			r := startTasks(t, logPath(t), mode, IdempotencyOn, 2)
			want(t, "claim t1@10", r.claim(t, "t1", 10), true, "", TaskRunning, 10, 0, "")
			want(t, "claim t2@5", r.claim(t, "t2", 5), false, ReasonStaleTerm, TaskPending, 10, 0, "")
			// The same term again is fine (a leader runs many tasks).
			want(t, "complete t1@10", r.complete(t, "t1", 10, "r1"), true, "", TaskSucceeded, 10, 1, "r1")
			// A higher term raises the service's term, fencing 10 off.
			want(t, "claim t2@12", r.claim(t, "t2", 12), true, "", TaskRunning, 12, 0, "")
			want(t, "complete t2@10", r.complete(t, "t2", 10, "old"), false, ReasonStaleTerm, TaskRunning, 12, 0, "")
			want(t, "complete t2@12", r.complete(t, "t2", 12, "r2"), true, "", TaskSucceeded, 12, 1, "r2")
			sc := r.scan(t)
			if sc.Term != 12 || sc.Tasks["t2"].Owner != 12 || sc.Tasks["t1"].Owner != 10 || len(sc.Tasks) != 2 {
				t.Errorf("scan %+v", sc)
			}
			// Refusals are logged, with the term presented.
			es := r.entries(t)
			if len(es) != 7 {
				t.Fatalf("%d entries, want 7", len(es))
			}
			e := es[2]
			if e.Op != OpClaim || e.Accepted || e.Reason != ReasonStaleTerm || e.Token != 5 || !e.HasToken ||
				e.Service != svc || e.Task != "t2" || e.StateAfter != TaskPending || e.Process != 3 || e.PID != 77 ||
				e.Mode != mode || e.Idempotency != IdempotencyOn || e.Key != "" {
				t.Errorf("refused claim entry %+v", e)
			}
		})
	}
}

func TestTaskFencingOffAcceptsLowerTerm(t *testing.T) {
	r := startTasks(t, logPath(t), ModeOff, IdempotencyOn, 2)
	want(t, "claim t1@10", r.claim(t, "t1", 10), true, "", TaskRunning, 10, 0, "")
	// Accepted, and the service's term stays the highest seen.
	want(t, "claim t2@5", r.claim(t, "t2", 5), true, "", TaskRunning, 10, 0, "")
	want(t, "complete t2@5", r.complete(t, "t2", 5, "r2"), true, "", TaskSucceeded, 10, 1, "r2")
	want(t, "complete t1@3", r.complete(t, "t1", 3, "r1"), true, "", TaskSucceeded, 10, 1, "r1")
}

func TestTaskIdempotency(t *testing.T) {
	t.Run("on", func(t *testing.T) {
		r := startTasks(t, logPath(t), ModeOn, IdempotencyOn, 1)
		want(t, "first complete", r.complete(t, "t1", 1, "r1"), true, "", TaskSucceeded, 1, 1, "r1")
		// Not executed again: the stored result comes back for reuse.
		want(t, "second complete", r.complete(t, "t1", 2, "r2"), false, ReasonDone, TaskSucceeded, 2, 1, "r1")
		want(t, "claim after done", r.claim(t, "t1", 2), false, ReasonDone, TaskSucceeded, 2, 1, "r1")
		if e := r.entries(t)[2]; e.Accepted || e.Reason != ReasonDone || e.Executions != 1 || e.Result != "r1" {
			t.Errorf("done entry %+v", e)
		}
	})
	t.Run("off", func(t *testing.T) {
		r := startTasks(t, logPath(t), ModeOn, IdempotencyOff, 1)
		want(t, "first complete", r.complete(t, "t1", 1, "r1"), true, "", TaskSucceeded, 1, 1, "r1")
		// The duplicate execution the election seed warns about.
		want(t, "second complete", r.complete(t, "t1", 1, "r2"), true, "", TaskSucceeded, 1, 2, "r2")
		want(t, "claim again", r.claim(t, "t1", 1), true, "", TaskRunning, 1, 2, "r2")
	})
}

// TestLostReply: with share 1.0 every task call is committed and its reply
// dropped; the client must see an unknown outcome, and its retry then
// meets the committed entry as idempotency says.
func TestLostReply(t *testing.T) {
	for _, tc := range []struct {
		idem  string
		retry func(t *testing.T, rep TaskReply)
	}{
		{IdempotencyOn, func(t *testing.T, rep TaskReply) {
			want(t, "retry", rep, false, ReasonDone, TaskSucceeded, 4, 1, "r1")
		}},
		{IdempotencyOff, func(t *testing.T, rep TaskReply) {
			want(t, "retry", rep, true, "", TaskSucceeded, 4, 2, "r1")
		}},
	} {
		t.Run(tc.idem, func(t *testing.T) {
			r := startTasks(t, logPath(t), ModeOn, tc.idem, 1)
			ctx := context.Background()
			if err := r.c.SetLostReply(ctx, 1.0); err != nil {
				t.Fatal(err)
			}
			req := TaskRequest{Service: svc, Task: "t1", Term: 4, Process: 1, Result: "r1"}
			_, err := r.c.Complete(ctx, req)
			if err == nil || IsDefinite(err) {
				t.Fatalf("dropped reply: err %v, definite %v", err, IsDefinite(err))
			}
			es := r.entries(t)
			// Exactly one entry: nothing (such as the HTTP transport)
			// retried the call behind the caller's back.
			if len(es) != 2 {
				t.Fatalf("%d entries after one dropped complete, want 2", len(es))
			}
			if e := es[1]; !e.ReplyDropped || !e.Accepted || e.Executions != 1 || e.Op != OpComplete {
				t.Fatalf("dropped entry %+v", e)
			}
			// Scan is not a task call and is never dropped.
			if sc := r.scan(t); sc.Tasks["t1"].State != TaskSucceeded {
				t.Fatalf("scan %+v", sc)
			}
			if err := r.c.SetLostReply(ctx, 0); err != nil {
				t.Fatal(err)
			}
			rep, err := r.c.Complete(ctx, req)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			tc.retry(t, rep)
			if e := r.entries(t)[2]; e.ReplyDropped {
				t.Errorf("retry entry marked dropped: %+v", e)
			}
		})
	}
}

func TestLostReplyShare(t *testing.T) {
	r := startTasks(t, logPath(t), ModeOn, IdempotencyOff, 1)
	ctx := context.Background()
	if err := r.c.SetLostReply(ctx, 0.5); err != nil {
		t.Fatal(err)
	}
	const n = 60
	dropped := 0
	for i := range n {
		_, err := r.c.Claim(ctx, TaskRequest{Service: svc, Task: "t1", Term: int64(i)})
		if err != nil {
			if IsDefinite(err) {
				t.Fatalf("claim %d: definite error %v", i, err)
			}
			dropped++
		}
	}
	es := r.entries(t)
	logged := 0
	for _, e := range es {
		if e.ReplyDropped {
			logged++
		}
	}
	if len(es) != n+1 || logged != dropped {
		t.Fatalf("%d entries (want %d), %d marked dropped, client saw %d errors", len(es), n+1, logged, dropped)
	}
	if dropped == 0 || dropped == n {
		t.Errorf("share 0.5 dropped %d of %d", dropped, n)
	}
	for _, share := range []float64{-0.1, 1.5} {
		err := r.c.SetLostReply(ctx, share)
		if err == nil || !IsDefinite(err) {
			t.Errorf("share %v: err %v", share, err)
		}
	}
}

func TestTaskRestartReplaysTable(t *testing.T) {
	path := logPath(t)
	r := startTasks(t, path, ModeOn, IdempotencyOn, 3)
	r.claim(t, "t1", 5)
	r.complete(t, "t1", 5, "r1")
	r.claim(t, "t2", 7)
	r.claim(t, "t3", 6) // stale
	r.claim(t, "nope", 9)
	r.write(t, "k", 1, tok(3)) // a lock key next to the table
	before := r.scan(t)
	keys := r.state(t)
	r.stop(t)

	// Restarted with idempotency off: the old entries replay under the
	// modes they were logged with, new ones follow the new mode.
	r2 := startCfg(t, Config{LogPath: path, Mode: ModeOn, Idempotency: IdempotencyOff})
	after := r2.scan(t)
	before.Seq, after.Seq = 0, 0
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("scan after restart %+v, before %+v", after, before)
	}
	if got := r2.state(t); !reflect.DeepEqual(got, keys) {
		t.Fatalf("keys after restart %v, before %v", got, keys)
	}
	// Fencing survives the restart: term 6 is below 7.
	want(t, "stale after restart", r2.claim(t, "t3", 6), false, ReasonStaleTerm, TaskPending, 7, 0, "")
	want(t, "complete t1 again", r2.complete(t, "t1", 8, "r1b"), true, "", TaskSucceeded, 8, 2, "r1b")
	// A retried init changes nothing that exists.
	rep, err := r2.c.InitTasks(context.Background(), InitRequest{Service: svc, Tasks: []string{"t1", "t4", "t4"}})
	if err != nil || rep.Added != 1 || rep.Tasks != 4 {
		t.Fatalf("re-init: %+v %v", rep, err)
	}
	final := r2.scan(t)
	r2.stop(t)
	es, err := ReadApplyLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if es[8].Seq != 9 || es[8].Idempotency != IdempotencyOff {
		t.Fatalf("first entry after restart %+v", es[8])
	}
	tables, err := ReplayAll(es)
	if err != nil {
		t.Fatal(err)
	}
	if got := tables.Services[svc]; got.Term != final.Term || !reflect.DeepEqual(got.Tasks, final.Tasks) {
		t.Fatalf("replay %+v, live %+v", got, final)
	}
	if tables.Services[svc].Tasks["t4"] != newTask {
		t.Fatalf("t4 %+v", tables.Services[svc].Tasks["t4"])
	}
}

// TestReplayRejectsTamperedTaskEntry: a logged outcome the rule does not
// give (an extra execution, an accepted stale term) is caught.
func TestReplayRejectsTamperedTaskEntry(t *testing.T) {
	r := startTasks(t, logPath(t), ModeOn, IdempotencyOn, 1)
	r.claim(t, "t1", 5)
	r.claim(t, "t1", 4)
	r.complete(t, "t1", 5, "r")
	r.stop(t)
	es := r.entries(t)
	if _, err := ReplayAll(es); err != nil {
		t.Fatal(err)
	}
	for name, tamper := range map[string]func(e []Entry){
		"executions":         func(e []Entry) { e[3].Executions = 2 },
		"stale accepted":     func(e []Entry) { e[2].Accepted, e[2].Reason, e[2].StateAfter = true, "", TaskRunning },
		"idempotency absent": func(e []Entry) { e[1].Idempotency = "" },
		"no service":         func(e []Entry) { e[1].Service = "" },
	} {
		c := append([]Entry(nil), es...)
		tamper(c)
		if _, err := ReplayAll(c); err == nil {
			t.Errorf("%s: tampered log replayed", name)
		}
	}
}

func TestTaskUnknownAndScanOfUnknownService(t *testing.T) {
	r := startTasks(t, logPath(t), ModeOn, IdempotencyOn, 1)
	want(t, "unknown task", r.claim(t, "t9", 1), false, ReasonUnknownTask, "", NoToken, 0, "")
	sc, err := r.c.Scan(context.Background(), "payroll")
	if err != nil || sc.Term != NoToken || len(sc.Tasks) != 0 || sc.Tasks == nil {
		t.Fatalf("scan of unknown service: %+v %v", sc, err)
	}
}

func TestTaskBadRequestsLogNothing(t *testing.T) {
	r := startCfg(t, Config{LogPath: logPath(t), Mode: ModeOn})
	cases := []struct{ path, body, want string }{
		{"/tasks/init", `{"service":"","tasks":["a"]}`, "empty service"},
		{"/tasks/init", `{"service":"s","tasks":[]}`, "no tasks"},
		{"/tasks/init", `{"service":"s","tasks":["a",""]}`, "empty task name"},
		{"/task/claim", `{"service":"s","task":"a","term":-1}`, "negative term"},
		{"/task/claim", `{"service":"s","task":"a","term":1,"result":"x"}`, "no result"},
		{"/task/claim", `{"service":"s","task":"","term":1}`, "empty task"},
		{"/task/claim", `{"service":"s","task":"a","trem":1}`, "unknown field"},
		{"/task/complete", `{"service":"s","task":"a","term":1}`, "result id"},
		{"/task/complete", `{"task":"a","term":1,"result":"x"}`, "empty service"},
		{"/task/scan", `{}`, "empty service"},
		{"/faults/lost-reply", `{"share":"all"}`, "bad JSON"},
	}
	for _, tc := range cases {
		resp, err := http.Post("http://"+r.addr+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %s: %d %q, want 400 mentioning %q", tc.path, tc.body, resp.StatusCode, body, tc.want)
		}
	}
	if _, err := r.c.Complete(context.Background(), TaskRequest{Service: svc, Task: "t1", Term: 1}); !IsDefinite(err) {
		t.Errorf("complete without result: err %v, want definite", err)
	}
	if es := r.entries(t); len(es) != 0 {
		t.Fatalf("bad requests were logged: %+v", es)
	}
}

func TestServeRejectsBadIdempotency(t *testing.T) {
	err := Serve(context.Background(), Config{Listen: "127.0.0.1:0", LogPath: logPath(t), Mode: ModeOn, Idempotency: "maybe"},
		func(string) { t.Error("ready called") })
	if err == nil || !strings.Contains(err.Error(), "idempotency") {
		t.Fatalf("err %v", err)
	}
}

// TestLockEntriesUnchanged: the task fields must not change a single byte
// of a lock entry, which other tools and old logs rely on.
func TestLockEntriesUnchanged(t *testing.T) {
	const golden = `{"seq":1,"wall":0,"op":"write","key":"k","token":7,"has_token":true,"value":3,"process":1,"accepted":true,"prev_value":0,"prev_token":-1,"prev_fence":-1,"mode":"on"}` + "\n" +
		`{"seq":2,"wall":0,"op":"read","key":"k","token":-1,"has_token":false,"value":3,"process":2,"accepted":true,"prev_value":3,"prev_token":7,"prev_fence":7,"mode":"on"}` + "\n" +
		`{"seq":3,"wall":0,"op":"write","key":"k","token":6,"has_token":true,"value":4,"process":1,"accepted":false,"reason":"stale token 6 < fence 7","prev_value":3,"prev_token":7,"prev_fence":7,"mode":"on"}` + "\n"
	r := start(t, logPath(t), ModeOn)
	r.write(t, "k", 3, tok(7))
	r.read(t, "k", nil)
	r.write(t, "k", 4, tok(6))
	r.stop(t)
	raw, err := os.ReadFile(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for line := range strings.Lines(string(raw)) {
		// Wall is the only field that differs from run to run.
		i := strings.Index(line, `"wall":`)
		j := i + strings.Index(line[i:], ",")
		got.WriteString(line[:i] + `"wall":0` + line[j:])
	}
	if got.String() != golden {
		t.Fatalf("lock entries changed:\n%s\nwant:\n%s", got.String(), golden)
	}
	// And an old entry round-trips to the same bytes.
	es, err := ReadApplyLogFrom(strings.NewReader(golden))
	if err != nil {
		t.Fatal(err)
	}
	var again strings.Builder
	for _, e := range es {
		line, err := encodeLine(e)
		if err != nil {
			t.Fatal(err)
		}
		again.Write(line)
	}
	if again.String() != golden {
		t.Fatalf("round trip changed entries:\n%s", again.String())
	}
}

// TestConcurrentTaskCalls hammers the table from several clients with the
// lost-reply fault on, then checks that the log re-decides entry by entry
// (ReplayAll) to the live table, and that executions match the log.
func TestConcurrentTaskCalls(t *testing.T) {
	const workers, ops, tasks = 6, 80, 5
	r := startTasks(t, logPath(t), ModeOn, IdempotencyOff, tasks)
	ctx := context.Background()
	if err := r.c.SetLostReply(ctx, 0.2); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := range ops {
				req := TaskRequest{Service: svc, Task: fmt.Sprintf("t%d", 1+rng.IntN(tasks)), Term: int64(i + rng.IntN(10)), Process: w}
				var err error
				if rng.IntN(2) == 0 {
					_, err = r.c.Claim(ctx, req)
				} else {
					req.Result = fmt.Sprintf("w%d-%d", w, i)
					_, err = r.c.Complete(ctx, req)
				}
				if err != nil && IsDefinite(err) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	live := r.scan(t)
	es := r.entries(t)
	if len(es) != 1+workers*ops {
		t.Fatalf("%d entries", len(es))
	}
	tables, err := ReplayAll(es)
	if err != nil {
		t.Fatal(err)
	}
	if got := tables.Services[svc]; got.Term != live.Term || !reflect.DeepEqual(got.Tasks, live.Tasks) {
		t.Fatalf("replay %+v != live %+v", got, live)
	}
	executed := map[string]int64{}
	var accepted, refused, dropped int
	for _, e := range es[1:] {
		switch {
		case e.Accepted:
			accepted++
		default:
			refused++
		}
		if e.ReplyDropped {
			dropped++
		}
		if e.Accepted && e.Op == OpComplete {
			executed[e.Task]++
		}
	}
	for name, ts := range live.Tasks {
		if ts.Executions != executed[name] {
			t.Errorf("%s: %d executions, log has %d accepted completes", name, ts.Executions, executed[name])
		}
	}
	if accepted == 0 || refused == 0 || dropped == 0 {
		t.Errorf("not every outcome exercised: %d accepted, %d refused, %d dropped", accepted, refused, dropped)
	}
}
