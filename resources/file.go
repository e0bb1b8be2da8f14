package resources

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/zkchaos/zkchaos/internal/jsonl"
)

// writer appends samples, each line handed to the kernel in one write as
// it is taken (a killed controller loses no sample it had); close fsyncs.
// After its first error it writes nothing more and keeps that error.
type writer struct {
	mu     sync.Mutex
	f      *os.File
	err    error
	closed bool
}

// createWriter opens path for appending: a resumed soak continues the
// file of its earlier segments.
func createWriter(path string) (*writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("resources: open %s: %w", path, err)
	}
	return &writer{f: f}, nil
}

func (w *writer) write(s Sample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed {
		return w.err
	}
	b, err := json.Marshal(s)
	if err != nil {
		w.err = fmt.Errorf("resources: encode sample: %w", err)
		return w.err
	}
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		w.err = fmt.Errorf("resources: write %s: %w", w.f.Name(), err)
	}
	return w.err
}

func (w *writer) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	err := w.err
	if serr := w.f.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("resources: fsync: %w", serr)
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("resources: close: %w", cerr)
	}
	w.err = err
	return err
}

// ReadFile reads resources.jsonl by the rule of every file a run writes
// as it goes (internal/jsonl): only a cut-off last line is dropped
// (truncated), any other line that does not parse is an error naming it.
func ReadFile(path string) (samples []Sample, truncated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	return read(f, path)
}

func read(r io.Reader, name string) ([]Sample, bool, error) {
	var out []Sample
	trunc, err := jsonl.Each(r, func(b []byte, _ int) error {
		var s Sample
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return out, trunc, fmt.Errorf("%s %w", name, err)
	}
	return out, trunc, nil
}
