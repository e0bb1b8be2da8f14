package janitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zkchaos/zkchaos/cluster/external"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/proc"
)

// A run's subtree on an external ensemble (--cluster external) is
// protected by the run's own digest identity: only that identity can
// delete the nodes beneath the lock root. The controller removes the
// subtree at its end and the janitor when the controller dies; when both
// die at once (a job killed whole) nobody holding the identity is left.
// So the controller also keeps a record on its machine, for as long as
// the subtree may exist: the ensemble's addresses, the root, the identity
// and the run's owners (controller and janitor, by PID and start time).
// A sweep of dead runs (chaos cleanup, every run's start) removes the
// subtree of each record whose owners are both gone, then the record.
//
// Liveness is judged from the record, on the machine that wrote it,
// never from the shared ensemble: a subtree another machine's run keeps
// there is not this machine's to judge (its PIDs mean nothing here), and
// without its identity could not be removed anyway. The record is
// readable by its user only (mode 0600), as the run's processes'
// environment, which carries the same identity, is.

// recordDir holds the records: the user's state folder, where it
// outlives a reboot (the subtree does, on the user's ensemble). Tests
// point it elsewhere.
var recordDir = defaultRecordDir()

func defaultRecordDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "zkchaos", "znodes")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "zkchaos", "znodes")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("zkchaos-%d", os.Getuid()), "znodes")
}

// subtreeRecord is one record's file.
type subtreeRecord struct {
	Run    string `json:"run"`
	Owners string `json:"owners"` // proc.Owners.String()
	ZNodes
}

func recordPath(run string) string { return filepath.Join(recordDir, run+".json") }

// RecordZNodes keeps the record of run's subtree zn, owned by owners,
// until ForgetZNodes. The controller writes it before the subtree exists.
func RecordZNodes(run string, owners proc.Owners, zn ZNodes) error {
	if strings.ContainsAny(run, "/.") || run == "" {
		return fmt.Errorf("record the run's znodes: bad run id %q", run)
	}
	if err := os.MkdirAll(recordDir, 0o700); err != nil {
		return fmt.Errorf("record the run's znodes: %w", err)
	}
	b, err := json.Marshal(subtreeRecord{Run: run, Owners: owners.String(), ZNodes: zn})
	if err != nil {
		return fmt.Errorf("record the run's znodes: %w", err)
	}
	if err := store.WriteFileAtomic(recordPath(run), b); err != nil {
		return fmt.Errorf("record the run's znodes: %w", err)
	}
	return os.Chmod(recordPath(run), 0o600)
}

// ForgetZNodes removes run's record once its subtree is gone.
func ForgetZNodes(run string) error {
	if err := os.Remove(recordPath(run)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forget the run's znodes: %w", err)
	}
	return nil
}

// readRecords lists the records, skipping (and reporting) unreadable ones.
func readRecords() ([]subtreeRecord, []error) {
	ents, err := os.ReadDir(recordDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{fmt.Errorf("znode records: %w", err)}
	}
	var recs []subtreeRecord
	var errs []error
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		var r subtreeRecord
		b, err := os.ReadFile(filepath.Join(recordDir, e.Name()))
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil || r.Run+".json" != e.Name() {
			errs = append(errs, fmt.Errorf("znode record %s: unreadable (%v)", e.Name(), err))
			continue
		}
		recs = append(recs, r)
	}
	return recs, errs
}

// subtrees removes the subtree of every record whose owners are both
// gone (every record with all), then the record. An ensemble that does
// not answer keeps its record, said, for a later sweep.
func (c *cleaner) subtrees(ctx context.Context) {
	recs, errs := readRecords()
	for _, err := range errs {
		c.fail(err)
	}
	for _, r := range recs {
		if !c.all && !proc.ParseOwners(r.Owners).Gone() {
			continue
		}
		addrs, err := external.ParseAddrs(r.ZK)
		if err == nil {
			err = external.Probe(ctx, addrs)
		}
		if err != nil {
			c.say(fmt.Sprintf("run %s: znodes %s on %s kept: the ensemble does not answer (%v)", r.Run, r.Root, r.ZK, err))
			continue
		}
		n, err := removeZNodes(ctx, &r.ZNodes)
		if err != nil {
			c.fail(fmt.Errorf("run %s: %w", r.Run, err))
			continue
		}
		c.say(fmt.Sprintf("run %s: znodes %s on %s removed (%d)", r.Run, r.Root, r.ZK, n))
		c.fail(ForgetZNodes(r.Run))
	}
}
