package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	br := bufio.NewReaderSize(r, 256<<10)
	line := 0
	for {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return res, fmt.Errorf("read line %d: %w", line+1, err)
		}
		line++
		last := errors.Is(err, io.EOF) // no trailing newline
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if last {
				return res, nil
			}
			continue
		}
		var e Event
		if perr := decode(b, &e); perr != nil {
			if last {
				res.Truncated = true
				return res, nil
			}
			return res, fmt.Errorf("line %d: %w", line, perr)
		}
		res.Events = append(res.Events, e)
		if last {
			return res, nil
		}
	}
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
