package monitor

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/zkchaos/zkchaos/internal/jsonl"
)

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
