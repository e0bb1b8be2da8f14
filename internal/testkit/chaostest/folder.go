package chaostest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/netns"
)

// ReadJSON decodes the file name of run folder dir into a T, failing the
// test if it is missing or not the expected JSON. Tests decode into their
// own small structs (only the fields they assert), so that a test reads
// the run folder as a user's tool would, not through the writer's types.
func ReadJSON[T any](t *testing.T, dir, name string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// Results is the part of results.json the integration tests assert: the
// verdict, the gate, and per checker its verdict and the details tests
// look at.
type Results struct {
	Valid    any                `json:"valid"`
	Gate     []string           `json:"gate"`
	Checkers map[string]Checker `json:"checkers"`
}

// Checker is one checker's entry in results.json.
type Checker struct {
	Valid      any              `json:"valid"`
	Gating     bool             `json:"gating"`
	ElapsedMS  float64          `json:"elapsed_ms"`
	Violations []map[string]any `json:"violations"`
	// register and mutex (porcupine)
	Partitions     int               `json:"partitions"`
	FailingKeys    []string          `json:"failing_keys"`
	Visualizations map[string]string `json:"visualizations"`
	Note           string            `json:"note"`
	// stats: completions per operation
	Ops map[string]OpCounts `json:"ops"`
}

// OpCounts is how many operations of one kind completed ok, failed, or
// ended unknown (info).
type OpCounts struct {
	OK   int `json:"ok"`
	Fail int `json:"fail"`
	Info int `json:"info"`
}

// ReadResults reads the run folder's results.json.
func ReadResults(t *testing.T, dir string) Results {
	t.Helper()
	return ReadJSON[Results](t, dir, store.ResultsFile)
}

// TestFile is the part of test.json the tests use: the run id (the tag
// of every process of the run, and the owner of its network slot) and the
// network mode the run chose.
type TestFile struct {
	RunID    string `json:"run_id"`
	NetMode  string `json:"net_mode"`
	Name     string `json:"name"`
	Workload string `json:"workload"`
	Service  string `json:"service"`
}

// ReadTest reads the run folder's test.json.
func ReadTest(t *testing.T, dir string) TestFile {
	t.Helper()
	return ReadJSON[TestFile](t, dir, store.TestFile)
}

// LastNemesis is the last nemesis event in the run folder's history, nil
// while there is none (or no readable history yet): what fault is in
// effect right now, for tests that act on a run in the middle of one.
func LastNemesis(dir string) *history.Event {
	h, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil {
		return nil
	}
	for i := len(h.Events) - 1; i >= 0; i-- {
		if h.Events[i].Process == history.Nemesis {
			return &h.Events[i]
		}
	}
	return nil
}

// PausedNow reports whether the history's last nemesis event is a pause
// that completed (a holder is stopped right now): the moment tests pick
// to kill, interrupt or starve a run, when undoing a fault matters most.
func PausedNow(dir string) bool {
	e := LastNemesis(dir)
	return e != nil && e.F == history.FPause && e.Type == history.OK
}

// Verified reports whether event e says the harness checked its effect
// (value.verified true): a fault recorded without that took effect only
// as far as anyone knows.
func Verified(e *history.Event) bool {
	return e != nil && e.Value != nil && e.Value.Verified != nil && *e.Value.Verified
}

// FaultOp is one nemesis operation as the history records it: its
// invocation's verb and its completion.
type FaultOp struct {
	F        string
	Type     history.Type
	Took     time.Duration // from invocation to completion
	Verified bool
	Value    history.Value
	Err      string
}

// FaultOps pairs the nemesis's invocations in the run folder's history
// with their completions, so that tests can assert what each fault did
// and how long it took, from the record rather than from logs.
func FaultOps(t *testing.T, dir string) []FaultOp {
	t.Helper()
	h, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var ops []FaultOp
	var inv *history.Event
	for i := range h.Events {
		e := &h.Events[i]
		if e.Process != history.Nemesis {
			continue
		}
		if e.Type == history.Invoke {
			inv = e
			continue
		}
		if inv == nil || inv.F != e.F {
			continue
		}
		op := FaultOp{F: e.F, Type: e.Type, Took: time.Duration(e.Time - inv.Time), Err: e.Error}
		if e.Value != nil {
			op.Value = *e.Value
		}
		op.Verified = Verified(e)
		ops = append(ops, op)
		inv = nil
	}
	return ops
}

// RunSlot is the network slot the run in folder dir claimed, from its
// controller log ("network created ... slot=N", or "network attached" for
// a run on a Docker network's bridge), or -1 when it claimed
// none (loopback, or it died before). After the run the slot may be
// another run's; the log is the only record of which one was ours.
func RunSlot(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, store.LogFile))
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(b) {
		if !bytes.Contains(line, []byte(`msg="network created"`)) && !bytes.Contains(line, []byte(`msg="network attached"`)) {
			continue
		}
		for _, f := range bytes.Fields(line) {
			if v, ok := bytes.CutPrefix(f, []byte("slot=")); ok {
				if s, err := strconv.Atoi(string(v)); err == nil {
					return s
				}
			}
		}
	}
	return -1
}

// SlotOwner is the run id network slot s's slot file names ("" and an
// error without a file). It reads the one file, cheaply enough to poll
// every few milliseconds, which race tests do to catch a claim or a
// release as it happens.
func SlotOwner(s int) (string, error) {
	b, err := os.ReadFile(filepath.Join(netns.StateDir, fmt.Sprintf("slot-%d.json", s)))
	if err != nil {
		return "", err
	}
	var f netns.SlotFile
	err = json.Unmarshal(b, &f)
	return f.RunID, err
}

// The moments of a run that RunPhase tells apart, in the order a run
// goes through them (the fault loop's four repeat while it lasts).
const (
	MomentSetup    = "setup"    // folder, janitor, network, resource, ensemble, workers
	MomentQuiet    = "quiet"    // the workload, no fault in effect
	MomentInject   = "inject"   // a fault invoked, not yet in effect
	MomentHold     = "hold"     // a fault in effect
	MomentUndo     = "undo"     // a fault's undo invoked, not yet done
	MomentFinal    = "final"    // restore, recovery, final reads
	MomentTeardown = "teardown" // workers, resource, subtree, ensemble, network
	MomentCheck    = "check"    // history closed, the checkers run
	MomentReport   = "report"   // results.json written, the report being written
)

// RunPhase is the moment the run in dir is at, from its folder: the
// status file's phase, and within the workload the last nemesis event of
// the history (an invoked start verb is inject, its completion hold, an
// invoked stop verb undo, its completion quiet). A folder without a
// status yet is setup.
func RunPhase(dir string) string {
	st, err := store.ReadStatus(filepath.Join(dir, store.StatusFile))
	if err != nil {
		return MomentSetup
	}
	switch st.Phase {
	case store.PhaseWorkload:
		return faultMoment(lastNemesisLine(dir))
	case store.PhaseFinal:
		return MomentFinal
	case store.PhaseTeardown:
		return MomentTeardown
	case store.PhaseDone:
		if _, err := os.Stat(filepath.Join(dir, store.ResultsFile)); err == nil {
			return MomentReport
		}
		return MomentCheck
	}
	return MomentSetup
}

// faultMoment is the workload's moment after nemesis event e (nil: none
// yet).
func faultMoment(e *history.Event) string {
	if e == nil {
		return MomentQuiet
	}
	for _, v := range history.Faults {
		switch {
		case e.F == v.Start && e.Type == history.Invoke:
			return MomentInject
		case e.F == v.Start:
			return MomentHold
		case e.F == v.Stop && e.Type == history.Invoke:
			return MomentUndo
		}
	}
	return MomentQuiet
}

// faultVerb reports whether f starts or stops a fault (not an
// observation such as a session seen gone, which happens while a fault
// holds).
func faultVerb(f string) bool {
	for _, v := range history.Faults {
		if f == v.Start || f == v.Stop {
			return true
		}
	}
	return false
}

// lastNemesisLine is the history's last nemesis event of a fault verb, read from the
// file's end: cheap enough to poll every few milliseconds, which a test
// that aims at a moment does.
func lastNemesisLine(dir string) *history.Event {
	b, err := os.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil {
		return nil
	}
	for len(b) > 0 {
		i := bytes.LastIndexByte(bytes.TrimRight(b, "\n"), '\n')
		line := b[i+1:]
		b = b[:max(i, 0)]
		if !bytes.Contains(line, []byte(`"process":"nemesis"`)) {
			continue
		}
		var e history.Event
		if json.Unmarshal(line, &e) == nil && faultVerb(e.F) {
			return &e
		}
	}
	return nil
}
