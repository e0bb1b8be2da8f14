package synth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/resource/register"
)

// testJSON is the part of test.json that `chaos check` reads (runner's
// Config and the run's identity, under the same names), so a synthetic
// folder is checked and reported as a real one.
type testJSON struct {
	Name            string        `json:"name"`
	Workload        string        `json:"workload"`
	Workers         int           `json:"workers"`
	Keys            int           `json:"keys"`
	TimeLimit       time.Duration `json:"time_limit"`
	SessionTimeout  time.Duration `json:"session_timeout"`
	Fencing         string        `json:"fencing"`
	Nemesis         []string      `json:"nemesis"`
	NemesisInterval time.Duration `json:"nemesis_interval"`
	PauseFor        time.Duration `json:"pause_for"`
	Seed            uint64        `json:"seed"`
	Recipe          string        `json:"recipe"`
	Hold            time.Duration `json:"hold"`
	Think           time.Duration `json:"think"`
	AcquireTimeout  time.Duration `json:"acquire_timeout"`
	OpTimeout       time.Duration `json:"op_timeout"`
	Start           time.Time     `json:"start"`
	StartWall       int64         `json:"start_wall_ns"`
	Synthetic       string        `json:"synthetic"`
}

// WriteDir writes the run into dir (created if missing) as `chaos run`
// leaves a folder: history.jsonl (each line history.Event.Marshal, the
// history writer's encoding), register.jsonl (register.EncodeEntry, the
// register's), test.json and status.json (store.WriteStatus: phase done,
// time limit reached, final phase run).
func (r Run) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err := r.writeHistory(filepath.Join(dir, store.HistoryFile)); err != nil {
		return err
	}
	if err := r.writeApplyLog(filepath.Join(dir, store.ApplyLogFile)); err != nil {
		return err
	}
	if err := r.writeTest(filepath.Join(dir, store.TestFile)); err != nil {
		return err
	}
	return store.WriteStatus(filepath.Join(dir, store.StatusFile), store.Status{Phase: store.PhaseDone,
		StoppedBecause: store.StopTimeLimit, TimeLimitNS: r.WorkloadNS, WorkloadNS: r.WorkloadNS, FinalPhase: true})
}

// lines writes one line per item through enc into path.
func lines(path string, n int, enc func(i int) ([]byte, error)) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		b, err := enc(i)
		if err == nil {
			_, err = w.Write(b)
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("synth: %s line %d: %w", path, i+1, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("synth: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("synth: %s: %w", path, err)
	}
	return nil
}

func (r Run) writeHistory(path string) error {
	return lines(path, len(r.Events), func(i int) ([]byte, error) {
		b, err := r.Events[i].Marshal()
		return append(b, '\n'), err
	})
}

func (r Run) writeApplyLog(path string) error {
	return lines(path, len(r.ApplyLog), func(i int) ([]byte, error) { return register.EncodeEntry(r.ApplyLog[i]) })
}

func (r Run) writeTest(path string) error {
	s := r.Spec
	nem := []string{"pause-holder"}
	if s.FaultEvery < 0 {
		nem = []string{"none"}
	}
	t := testJSON{Name: "synthetic", Workload: "lock", Workers: s.Workers, Keys: s.Keys, TimeLimit: time.Duration(r.WorkloadNS),
		SessionTimeout: s.SessionTimeout, Fencing: s.Fencing, Nemesis: nem, NemesisInterval: s.FaultEvery, PauseFor: s.Pause,
		Seed: s.Seed, Recipe: "seed", Hold: s.Hold, Think: s.Think, AcquireTimeout: s.AcquireTimeout, OpTimeout: s.OpTimeout,
		Start: time.Unix(0, r.StartWall).UTC(), StartWall: r.StartWall,
		Synthetic: fmt.Sprintf("internal/testkit/synth: %d operations, %d faults; not a real run", Ops(r.Events), r.Faults)}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return fmt.Errorf("synth: encode test.json: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}
