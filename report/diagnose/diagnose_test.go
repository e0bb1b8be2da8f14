package diagnose

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
)

// hist builds a history by hand, one operation at a time.
type hist struct {
	events []history.Event
	t      int64
}

func (h *hist) add(p history.Process, typ history.Type, f, errText string, v *history.Value) {
	h.t += 1e6
	h.events = append(h.events, history.Event{Index: int64(len(h.events)), Time: h.t, Process: p, Type: typ, F: f, Value: v, Error: errText})
}

// op is one operation of process p: its invocation and its completion.
func (h *hist) op(p history.Process, f string, typ history.Type, errText string) {
	h.add(p, history.Invoke, f, "", nil)
	h.add(p, typ, f, errText, nil)
}

// hello is a worker's hello, recorded as its connected session.
func (h *hist) hello(p history.Process, protocol int) {
	v := &history.Value{State: worker.StateConnected, Session: "0x1", Protocol: protocol}
	h.add(p, history.Invoke, history.FSession, "", v)
	h.add(p, history.OK, history.FSession, "", v)
}

func logs(m map[history.Process]string) func(history.Process) string {
	return func(p history.Process) string { return m[p] }
}

func hasHint(d Diagnosis, word string) bool {
	for _, h := range d.Hints {
		if strings.Contains(h, word) {
			return true
		}
	}
	return false
}

// TestNoAuth: a worker without the credential fails every acquire with
// ZooKeeper's NoAuth. Nothing completed; the diagnosis names the error
// once with its count, the stderr of the process that reported it first,
// the credential's variable, and what changed since the hello's (missing)
// version; not the register's secret.
func TestNoAuth(t *testing.T) {
	var h hist
	for p := range history.Process(3) {
		h.hello(p, 0)
	}
	for i := range 12 {
		h.op(history.Process(i%3), history.FAcquire, history.Fail, "zk: not authenticated")
	}
	h.op(history.Nemesis, "pause", history.Fail, "no holder")
	h.op(0, history.FFinalRead, history.OK, "") // the controller's read, not the subject's
	stderr := strings.Repeat("noise\n", 30) + "level=ERROR msg=\"create lock node\" err=\"zk: not authenticated\"\n"
	d := Of(h.events, logs(map[history.Process]string{0: stderr}))
	if !d.Stuck() || !d.Nothing || len(d.Failed) != 1 || d.Failed[0] != history.FAcquire {
		t.Fatalf("diagnosis %+v: want nothing completed, acquire failed", d)
	}
	if len(d.Errors) != 1 || d.Errors[0].Count != 12 || d.Errors[0].Process != 0 {
		t.Errorf("errors %+v: want one, 12 times, first by process 0", d.Errors)
	}
	if n := strings.Count(d.Stderr.Text, "\n") + 1; n != tailLines || !strings.Contains(d.Stderr.Text, "create lock node") {
		t.Errorf("stderr tail of %d lines: %q", n, d.Stderr.Text)
	}
	if !hasHint(d, "ZooKeeper credentials:") || hasHint(d, "the register's secret:") || !hasHint(d, "names no protocol version") {
		t.Errorf("hints %q: want the credential and the missing version, not the register", d.Hints)
	}
	out := d.String()
	for _, want := range []string{"the subject could not run: it completed no operation (acquire: 0 of 12 ok)",
		"acquire fail x12, first by process 0 at", "hello: no protocol version named", "stderr of process 0 (workers/p0.log)", "ZKCHAOS_ZK_AUTH"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// TestRegister401: a worker without the register's secret is granted
// its locks, and every read is refused with 401: the read kind failed,
// and the hint is the Authorization header, not the credential.
func TestRegister401(t *testing.T) {
	var h hist
	h.hello(0, worker.Protocol)
	for range 5 {
		h.op(0, history.FAcquire, history.OK, "")
		h.op(0, history.FRead, history.Fail, "register read: HTTP 401: missing or wrong register secret (Authorization: Bearer, from ZKCHAOS_REGISTER_SECRET)")
		h.op(0, history.FRelease, history.OK, "")
	}
	d := Of(h.events, nil)
	if !d.Stuck() || d.Nothing || len(d.Failed) != 1 || d.Failed[0] != history.FRead {
		t.Fatalf("diagnosis %+v: want the read kind failed", d)
	}
	if !hasHint(d, "the register's secret:") || !hasHint(d, "ZKCHAOS_REGISTER_SECRET") || hasHint(d, "ZKCHAOS_ZK_AUTH") || hasHint(d, "protocol's version") {
		t.Errorf("hints %q: want only the register's secret", d.Hints)
	}
	if got := d.Headline(); got != "the subject could not run: every read failed (read: 0 of 5 ok)" {
		t.Errorf("headline %q", got)
	}
}

// TestFirstCreateTimesOut: a client that retries its refused create
// answers every acquire with a timeout; never granted, that points at
// the credential too. Timeouts among grants do not.
func TestFirstCreateTimesOut(t *testing.T) {
	var h hist
	for range 4 {
		h.op(1, history.FAcquire, history.Info, "op-timeout: no answer within 7s")
	}
	if d := Of(h.events, nil); !d.Nothing || !hasHint(d, "ZKCHAOS_ZK_AUTH") {
		t.Errorf("acquires that all timed out: %+v, want the credential's hint", d)
	}
	h.op(1, history.FAcquire, history.OK, "")
	h.op(1, history.FRead, history.Fail, "connection refused")
	h.op(1, history.FRead, history.Fail, "dial tcp 198.18.0.1:7000: connect: connection refused")
	h.op(1, history.FRead, history.Fail, "connection refused")
	d := Of(h.events, nil)
	if hasHint(d, "ZKCHAOS_ZK_AUTH") || !hasHint(d, "the addresses") || len(d.Errors) != 3 {
		t.Errorf("%+v: want the addresses' hint only, and the two distinct read errors beside the timeout", d)
	}
}

// TestHealthy: a subject whose kinds each completed is not stuck, even
// with a few failures of one kind (below MinTries) and an error that
// carries 401 inside a token.
func TestHealthy(t *testing.T) {
	var h hist
	h.hello(0, worker.Protocol)
	for range 20 {
		h.op(0, history.FAcquire, history.OK, "")
		h.op(0, history.FWrite, history.OK, "")
		h.op(0, history.FRelease, history.OK, "")
	}
	h.op(2, "claim", history.Fail, "rejected: stale token 4294967401 < fence 4294967500")
	h.op(2, "claim", history.Fail, "rejected: stale token 4294967402 < fence 4294967500")
	d := Of(h.events, nil)
	if d.Stuck() || len(d.Hints) != 0 {
		t.Errorf("healthy subject diagnosed %+v", d)
	}
	if len(d.Errors) != 1 || d.Errors[0].Count != 2 {
		t.Errorf("errors differing only in numbers: %+v, want one counted twice", d.Errors)
	}
}

// TestErrorsBounded: at most MaxErrors distinct errors are kept, the
// first ones; no error text and no hint still say something.
func TestErrorsBounded(t *testing.T) {
	var h hist
	for _, e := range []string{"a", "b", "c", "d", "e", "f", ""} {
		h.op(0, history.FAcquire, history.Fail, "refused: "+e)
	}
	h.op(0, history.FAcquire, history.Fail, "")
	d := Of(h.events, nil)
	if len(d.Errors) != MaxErrors || d.Errors[0].Text != "refused: a" {
		t.Errorf("errors %+v", d.Errors)
	}
	if !strings.Contains(d.String(), "no known cause matches") {
		t.Errorf("text without hints:\n%s", d)
	}
	var none hist
	none.hello(0, 3)
	if d := Of(none.events, nil); !d.Nothing || !strings.Contains(d.Headline(), "none invoked") || !hasHint(d, "speaks protocol 3") {
		t.Errorf("nothing invoked: %+v", d)
	}
}

// TestDir: the run folder's history and the stderr log of the process
// of the first error.
func TestDir(t *testing.T) {
	dir := t.TempDir()
	var h hist
	h.hello(4, 0)
	h.op(4, history.FAcquire, history.Fail, "zk: not authenticated")
	var b strings.Builder
	for _, e := range h.events {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s\n", line)
	}
	if err := os.WriteFile(filepath.Join(dir, store.HistoryFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, store.WorkersDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(store.WorkerLogName(4))), []byte("p4 says NoAuth\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Dir(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if d.Stderr.Process != 4 || d.Stderr.Text != "p4 says NoAuth" || !hasHint(d, "ZKCHAOS_ZK_AUTH") {
		t.Errorf("diagnosis %+v", d)
	}
	if _, err := Dir(os.DirFS(t.TempDir())); err == nil {
		t.Error("a folder without a history: no error")
	}
}
