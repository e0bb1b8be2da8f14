package history

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/zkchaos/zkchaos/internal/jsonl"
)

// ReadResult is what Read found besides the events.
type ReadResult struct {
	Events []Event
	// Truncated is set when the last line had no newline and did not parse:
	// the writer was killed mid-line. That line is dropped; it is the only
	// damage a crash can do, so it is tolerated.
	Truncated bool
}

// ReadFile reads a history.jsonl file; see Read.
func ReadFile(path string) (ReadResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return ReadResult{}, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	res, err := Read(f)
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// Read parses a JSON-lines history. A malformed line anywhere but at the
// very end (without its newline) is an error naming the line number: a
// history that was damaged in the middle cannot be trusted. Blank lines are
// skipped.
func Read(r io.Reader) (ReadResult, error) {
	var res ReadResult
	trunc, err := jsonl.Each(r, func(b []byte, _ int) error {
		var e Event
		if err := decode(b, &e); err != nil {
			return err
		}
		res.Events = append(res.Events, e)
		return nil
	})
	res.Truncated = trunc
	return res, err
}

func decode(b []byte, e *Event) error {
	if err := json.Unmarshal(b, e); err != nil {
		return fmt.Errorf("not a history event: %w", err)
	}
	if !e.Type.Valid() {
		return fmt.Errorf("type %q is not one of invoke, ok, fail, info", e.Type)
	}
	if e.F == "" {
		return fmt.Errorf("event has no f")
	}
	if e.Time < 0 {
		return fmt.Errorf("negative time %d", e.Time)
	}
	return nil
}
