package resources

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/zkchaos/zkchaos/internal/jsonl"
)

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
