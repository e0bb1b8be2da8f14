package monitor

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/zkchaos/zkchaos/internal/jsonl"
)

// writer appends samples to monitor.jsonl, each line handed to the kernel
// in one write as soon as it is taken (as the history is), so a
// controller killed mid-run loses no sample it had; Close fsyncs. After
// its first error it writes nothing more and keeps that error.
type writer struct {
	mu     sync.Mutex
	f      *os.File
	err    error
	closed bool
}

func createWriter(path string) (*writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("monitor: create %s: %w", path, err)
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
		w.err = fmt.Errorf("monitor: encode sample: %w", err)
		return w.err
	}
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		w.err = fmt.Errorf("monitor: write %s: %w", w.f.Name(), err)
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
		err = fmt.Errorf("monitor: fsync: %w", serr)
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("monitor: close: %w", cerr)
	}
	w.err = err
	return err
}

// File is what ReadFile found in a monitor.jsonl.
type File struct {
	Samples []Sample
	// Truncated says the last line was cut off (the controller was killed
	// mid-write) and was dropped.
	Truncated bool
}

// ReadFile reads monitor.jsonl by the rule of every file a run writes as
// it goes (internal/jsonl): only a cut-off last line is dropped, any other
// line that does not parse is an error naming it.
func ReadFile(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	return read(f, path)
}

func read(r io.Reader, name string) (File, error) {
	var out File
	trunc, err := jsonl.Each(r, func(b []byte, _ int) error {
		var s Sample
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		out.Samples = append(out.Samples, s)
		return nil
	})
	out.Truncated = trunc
	if err != nil {
		return out, fmt.Errorf("%s %w", name, err)
	}
	return out, nil
}

// NearestBefore is the index of the last sample taken wholly before t
// (its end at or before t, on the run's clock), -1 when none was.
// Samples are in the order they were written, which is time order.
func NearestBefore(samples []Sample, t int64) int {
	best := -1
	for i, s := range samples {
		if s.EndNS() <= t && (best < 0 || s.EndNS() >= samples[best].EndNS()) {
			best = i
		}
	}
	return best
}
