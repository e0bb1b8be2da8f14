package soak

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// resumeTest is the part of test.json this test asserts.
type resumeTest struct {
	RunID    string `json:"run_id"`
	Segments []struct {
		RunID         string    `json:"run_id"`
		ControllerPID int       `json:"controller_pid"`
		FirstProcess  int       `json:"first_process"`
		Interrupted   int       `json:"interrupted"`
		End           time.Time `json:"end"`
		Ended         string    `json:"ended"`
	} `json:"segments"`
}

// TestResumedSoak: a fenced soak SIGKILLed mid-run, cleaned up, and
// resumed into its folder for 10 s more: the history keeps the first
// segment and appends the second (its process ids above every earlier
// one), the operations the dead controller left open are completed as
// info, test.json has two segments, chaos check judges the whole folder
// (valid: the last segment ran to its end) and says it had a gap, a
// second resume of the finished soak is refused, and nothing is left.
func TestResumedSoak(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	cmd, _, stderr := chaostest.Start(t, "soak", "--results", results, "--duration", "5m", "--seed", "6",
		"--acl", "off", "--resources-interval", "1s", "--progress", "off")
	dir := chaostest.WaitForRun(t, results, stderr, "200 history events", func(d string) bool {
		b, err := os.ReadFile(filepath.Join(d, store.HistoryFile))
		return err == nil && strings.Count(string(b), "\n") >= 200
	})
	crashAndCleanUp(t, cmd)
	first, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Command(chaostest.Binary(t), "soak", "--resume", dir, "--duration", "10s", "--progress", "off").CombinedOutput()
	if code := chaostest.ExitOf(err); code != 0 {
		t.Fatalf("chaos soak --resume: exit %d, want 0 (valid)\n%s", code, chaostest.Tail(string(res), 3000))
	}
	all, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	tf := chaostest.ReadJSON[resumeTest](t, dir, store.TestFile)
	if len(tf.Segments) != 2 || tf.Segments[0].RunID != tf.RunID || tf.Segments[1].RunID == tf.RunID ||
		tf.Segments[0].End.IsZero() || tf.Segments[1].Ended != store.StopTimeLimit {
		t.Fatalf("test.json segments %+v; want the first (run %s, ended) and the resumed one (ended %s)", tf.Segments, tf.RunID, store.StopTimeLimit)
	}
	assertAppended(t, first.Events, all.Events, tf.Segments[1].FirstProcess, tf.Segments[1].Interrupted)
	code, out := chaostest.Check(t, dir)
	if code != 0 || !strings.Contains(out, "complete in 2 segments") {
		t.Errorf("chaos check: exit %d, want 0 (valid) naming the 2 segments\n%s", code, chaostest.Tail(out, 1500))
	}
	again, err := exec.Command(chaostest.Binary(t), "soak", "--resume", dir, "--duration", "10s").CombinedOutput()
	if code := chaostest.ExitOf(err); code != 255 || !strings.Contains(strings.SplitN(string(again), "\n", 2)[0], "finished") {
		t.Errorf("resuming a finished soak: exit %d, want 255 naming it\n%s", code, again)
	}
	chaostest.AssertNothingLeft(t, dir)
}

// assertAppended checks that all is before followed by the resume: the
// interrupted operations completed as info, then only processes from
// firstProcess on, above every process of before.
func assertAppended(t *testing.T, before, all []history.Event, firstProcess, interrupted int) {
	t.Helper()
	if len(all) <= len(before)+interrupted {
		t.Fatalf("%d events after the resume, %d before: nothing appended", len(all), len(before))
	}
	for i, e := range before {
		b, _ := json.Marshal(e)
		a, _ := json.Marshal(all[i])
		if string(a) != string(b) {
			t.Fatalf("event %d changed by the resume:\n%s\nwas\n%s", i, a, b)
		}
	}
	maxBefore := history.Process(-1)
	for _, e := range before {
		maxBefore = max(maxBefore, e.Process)
	}
	if firstProcess <= int(maxBefore) || interrupted == 0 {
		t.Errorf("resumed segment: first process %d (earlier ones up to %d), %d interrupted operations; want above, and some", firstProcess, maxBefore, interrupted)
	}
	for _, e := range all[len(before) : len(before)+interrupted] {
		if e.Type != history.Info || e.Process > maxBefore || !strings.Contains(e.Error, "interrupted") {
			t.Errorf("event %d: %s %s of process %s (%q); want the dead controller's operation completed as info", e.Index, e.Type, e.F, e.Process, e.Error)
		}
	}
	for _, e := range all[len(before)+interrupted:] {
		if e.Process != history.Nemesis && int(e.Process) < firstProcess {
			t.Errorf("event %d of process %s after the resume: a process id of an earlier segment reused", e.Index, e.Process)
			return
		}
	}
}
