package jsonl

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// TestWriterTruncOrAppend: a writer created with trunc starts the file
// anew; without, it continues it. Lines are readable by Each as soon as
// written, and a write after Close is dropped without error.
func TestWriterTruncOrAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	lines := func() int {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		n := 0
		if _, err := Each(f, func([]byte, int) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i, c := range []struct {
		trunc bool
		want  int
	}{{true, 2}, {false, 4}, {true, 2}} {
		w, err := Create(path, "test", c.trunc)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := w.Write(map[string]int{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(1); err != nil {
			t.Errorf("write after close: %v", err)
		}
		if got := lines(); got != c.want {
			t.Errorf("round %d (trunc %v): %d lines, want %d", i, c.trunc, got, c.want)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode(), err)
	}
}
