package jsonl

import (
	"encoding/json"
	"strings"
	"testing"
)

func ints(t *testing.T, in string) ([]int, bool, error) {
	t.Helper()
	var out []int
	trunc, err := Each(strings.NewReader(in), func(b []byte, _ int) error {
		var v int
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, trunc, err
}

func TestEach(t *testing.T) {
	for _, c := range []struct {
		in    string
		want  int // values read
		trunc bool
		err   string
	}{
		{"1\n2\n", 2, false, ""},
		{"1\n\n  \n2\n", 2, false, ""},         // blank lines skipped
		{"1\n2", 2, false, ""},                 // a whole last line without its newline is kept
		{"1\n2\n{\"cut", 2, true, ""},          // a cut-off last line is dropped
		{"1\n{\"bad\n3\n", 1, false, "line 2"}, // damage in the middle is an error naming the line
		{"", 0, false, ""},
	} {
		got, trunc, err := ints(t, c.in)
		if len(got) != c.want || trunc != c.trunc || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: read %v, truncated %v, err %v; want %d values, truncated %v, error %q", c.in, got, trunc, err, c.want, c.trunc, c.err)
		}
	}
}
