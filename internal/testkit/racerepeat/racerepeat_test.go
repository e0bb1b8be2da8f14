package racerepeat

import (
	"fmt"
	"testing"
)

// fatalRecorder is a testing.TB whose Fatalf only records: Count's refusal
// of a bad value can be observed without failing this test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

// TestCount: the default when unset, the value when set, and a value that
// is not a positive integer fails the test, naming the variable.
func TestCount(t *testing.T) {
	t.Setenv(Env, "")
	if n := Count(t, 3); n != 3 {
		t.Errorf("unset: %d, want the default 3", n)
	}
	t.Setenv(Env, "40")
	if n := Count(t, 3); n != 40 {
		t.Errorf("%s=40: %d", Env, n)
	}
	for _, bad := range []string{"0", "-2", "many"} {
		t.Setenv(Env, bad)
		r := &fatalRecorder{TB: t}
		Count(r, 3)
		if want := fmt.Sprintf("%s=%q: want a positive integer", Env, bad); r.fatal != want {
			t.Errorf("%s=%s: fatal %q, want %q", Env, bad, r.fatal, want)
		}
	}
}
