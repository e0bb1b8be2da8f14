package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/cluster/backend"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// A soak resumed after its controller died (chaos soak --resume DIR): a
// new controller carries the same run folder on, with a new ensemble on
// the old data dirs (ZooKeeper's czxids, the lock tokens, continue above
// what the register's apply log holds, and the register replays that log),
// the history appended, and test.json's segments saying where the gaps
// are.

// Segment is one controller's part of a resumed run, in test.json.
type Segment struct {
	RunID         string    `json:"run_id"`
	Start         time.Time `json:"start"`
	ControllerPID int       `json:"controller_pid"`
	// Connect is the ensemble's client addresses in this segment (a new
	// slot may give new ones); empty for the first segment, whose
	// addresses are in its controller.log.
	Connect string `json:"connect,omitempty"`
	// FirstProcess is the lowest process id of this segment's workers.
	FirstProcess int `json:"first_process"`
	// Interrupted counts the operations the dead controller left open
	// that this segment completed as info when it started.
	Interrupted int `json:"interrupted,omitempty"`
	// End and Ended say when and why the segment ended (for a dead
	// controller: status.json's last update and phase). Empty while it
	// runs.
	End   time.Time `json:"end,omitzero"`
	Ended string    `json:"ended,omitempty"`
}

// Resumable is a soak run folder whose controller is dead, as LoadResume
// found it.
type Resumable struct {
	Dir    string
	Config Config
	test   testFile
	status store.Status
}

// ErrResume is the bad input of a --resume: nothing was started.
var ErrResume = errors.New("cannot resume")

// LoadResume reads DIR's test.json and status.json and refuses (an error
// wrapping ErrResume, naming the problem) a folder that is not a soak,
// ran elsewhere than the local backend, used protected lock roots,
// finished, or whose controller or processes still live.
func LoadResume(dir string) (*Resumable, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w %s: %s", ErrResume, dir, fmt.Sprintf(format, a...))
	}
	if _, err := store.Open(dir); err != nil {
		return nil, bad("%v", err)
	}
	r := &Resumable{Dir: dir}
	b, err := os.ReadFile(r.path(store.TestFile))
	if err != nil {
		return nil, bad("no test.json: %v", err)
	}
	if err := json.Unmarshal(b, &r.test); err != nil {
		return nil, bad("test.json: %v", err)
	}
	r.Config = r.test.Config
	switch {
	case !r.test.Soak:
		return nil, bad("not a soak (test.json has no \"soak\": true); only chaos soak runs resume")
	case !slices.Contains(backend.Resumable(), r.Config.Cluster):
		return nil, bad("the soak ran on the %s backend; %s is built for the %s backend only (the docker image keeps the old slot's zoo.cfg)",
			r.Config.Cluster, setting.Name("Resume"), strings.Join(backend.Resumable(), ", "))
	case r.Config.ACL == ACLOn:
		acl := setting.Name("ACL")
		return nil, bad("the soak ran with %s on: its digest secrets were kept nowhere, so a new controller cannot open the protected lock tree (soak with %s off to be able to resume)", acl, acl)
	}
	if r.Config.Resource == ResourcePostgres {
		return nil, bad("the soak ran with %s %s: a new controller would have to restart its server on the old data directory and carry its export on, which is not built; %s is built for the register",
			setting.Name("Resource"), ResourcePostgres, setting.Name("Resume"))
	}
	if r.status, err = store.ReadStatus(r.path(store.StatusFile)); err != nil {
		return nil, bad("%v", err)
	}
	if r.status.Phase == store.PhaseDone {
		return nil, bad("the soak finished (%s); there is nothing to resume", r.status.StoppedBecause)
	}
	if pid := r.status.ControllerPID; pid > 0 && proc.Alive(pid) {
		return nil, bad("its controller (pid %d) is still alive", pid)
	}
	left, err := proc.FindTagged(r.lastRunID())
	if err != nil {
		return nil, bad("%v", err)
	}
	if len(left) > 0 {
		return nil, bad("%d processes of run %s are still alive (pid %d, ...): run chaos cleanup first", len(left), r.lastRunID(), left[0].PID)
	}
	return r, nil
}

func (r *Resumable) path(name string) string { return (&store.Run{Dir: r.Dir}).Path(name) }

// segments are the run's segments so far: the first one made up from
// test.json when the run was never resumed.
func (r *Resumable) segments() []Segment {
	if len(r.test.Segments) > 0 {
		return append([]Segment(nil), r.test.Segments...)
	}
	return []Segment{{RunID: r.test.RunID, Start: r.test.Start, ControllerPID: r.test.ControllerPID}}
}

func (r *Resumable) lastRunID() string {
	s := r.segments()
	return s[len(s)-1].RunID
}

// origin is the first segment's start: the clock of the whole history.
func (r *Resumable) origin() time.Time { return time.Unix(0, r.test.StartWall) }

// segmentNo is the number of the segment this resume starts (2 for the
// first resume).
func (r *Resumable) segmentNo() int { return len(r.segments()) + 1 }

// appended is what appendHistory found in the dead controller's history.
type appended struct {
	// first is the lowest process id no earlier segment used.
	first int
	// interrupted counts the operations completed as info.
	interrupted int
	// lastNS is the run-clock time of its last event.
	lastNS int64
}

// interruptedError is the error of the info completions a resume writes.
const interruptedError = "interrupted: the controller died; completed when the soak was resumed"

// appendHistory opens the history for appending and completes as info,
// at the resume, every invocation the dead controller left open
// (integrity.OpenAtEnd: the checkers' own pairing).
func appendHistory(path string, origin time.Time) (*history.Writer, appended, error) {
	var a appended
	w, old, err := history.Append(path, origin)
	if err != nil {
		return nil, a, err
	}
	for _, e := range old {
		if e.Process != history.Nemesis {
			a.first = max(a.first, int(e.Process)+1)
		}
		a.lastNS = max(a.lastNS, e.Time)
	}
	open := integrity.OpenAtEnd(old)
	for _, inv := range open {
		c := history.Event{Process: inv.Process, Type: history.Info, F: inv.F, Key: inv.Key, Error: interruptedError}
		if _, err := w.Append(c); err != nil {
			_ = w.Close()
			return nil, a, err
		}
	}
	a.interrupted = len(open)
	return w, a, nil
}

// writeResumeTestFile records the segments in test.json: the dead
// controller's closed at its history's last event, with the phase its
// status.json last recorded, and this one's opened.
func (r *record) writeResumeTestFile(a appended, connect string) error {
	rs := r.resume
	segs := rs.segments()
	last := &segs[len(segs)-1]
	last.End = rs.origin().Add(time.Duration(a.lastNS)).UTC()
	last.Ended = fmt.Sprintf("controller died in phase %q (killed?); end is its history's last event", rs.status.Phase)
	segs = append(segs, Segment{RunID: r.runID, Start: r.t0, ControllerPID: os.Getpid(),
		Connect: connect, FirstProcess: a.first, Interrupted: a.interrupted})
	rs.test.Segments = segs
	return r.saveResumeTestFile()
}

// endSegment records why this segment ended.
func (r *record) endSegment() error {
	segs := r.resume.test.Segments
	last := &segs[len(segs)-1]
	last.End = time.Now()
	last.Ended = r.st.stoppedBecause()
	return r.saveResumeTestFile()
}

func (r *record) saveResumeTestFile() error {
	b, err := json.MarshalIndent(r.resume.test, "", "  ")
	if err != nil {
		return fmt.Errorf("encode test.json: %w", err)
	}
	if err := store.WriteFileAtomic(r.st.run.Path(store.TestFile), append(b, '\n')); err != nil {
		return fmt.Errorf("write test.json: %w", err)
	}
	return nil
}
