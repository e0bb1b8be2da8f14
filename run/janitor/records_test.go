package janitor

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/proc"
)

// TestSubtreeRecords: a sweep of dead runs judges a run's subtree by its
// record on this machine: a record whose controller lives is not touched
// (its ensemble not even dialled), one whose controller and janitor are
// both gone is swept, and one whose ensemble does not answer stays,
// said, for a later sweep; --all takes the live run's too. Records are
// readable by their user only and the report never shows the identity.
func TestSubtreeRecords(t *testing.T) {
	defer func(d string) { recordDir = d }(recordDir)
	recordDir = t.TempDir()
	const secret = "digest:zkchaos:s3cret"
	zn := ZNodes{ZK: "127.0.0.1:1", Root: "/zkchaos/x", Auth: secret}
	dead := proc.Owners{Controller: deadIdent(t), Janitor: deadIdent(t)}
	if err := RecordZNodes("deadrun1", dead, zn); err != nil {
		t.Fatal(err)
	}
	if err := RecordZNodes("liverun1", proc.Self(), zn); err != nil {
		t.Fatal(err)
	}
	if err := RecordZNodes("../evil", dead, zn); err == nil {
		t.Error("a run id with a path in it was recorded")
	}
	if st, err := os.Stat(recordPath("deadrun1")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("record: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	for _, all := range []bool{false, true} {
		c := &cleaner{all: all}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c.subtrees(ctx)
		cancel()
		rep := strings.Join(c.report, "\n")
		if strings.Contains(rep, "s3cret") {
			t.Errorf("the report shows the run's identity:\n%s", rep)
		}
		if !strings.Contains(rep, "run deadrun1: znodes /zkchaos/x on 127.0.0.1:1 kept: the ensemble does not answer") {
			t.Errorf("all=%v: the dead run's record is not said kept:\n%s", all, rep)
		}
		if strings.Contains(rep, "liverun1") != all {
			t.Errorf("all=%v: the live run's record in the report: %v\n%s", all, !all, rep)
		}
	}
	for _, run := range []string{"deadrun1", "liverun1"} {
		if _, err := os.Stat(recordPath(run)); err != nil {
			t.Errorf("record of %s gone though its subtree could not be removed: %v", run, err)
		}
	}
	if err := ForgetZNodes("deadrun1"); err != nil {
		t.Fatal(err)
	}
	if err := ForgetZNodes("deadrun1"); err != nil {
		t.Errorf("forgetting twice: %v", err)
	}
}
