package logcap

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// expected is what Capped must leave for input in with the given caps.
func expected(in []byte, head, tail int) []byte {
	if len(in) <= head+tail {
		return in
	}
	mid := in[head : len(in)-tail]
	var out bytes.Buffer
	out.Write(in[:head])
	fmt.Fprintf(&out, "\n[zkchaos: log capped at %d head + %d tail bytes: %d bytes (%d lines) dropped here; the last %d bytes follow]\n",
		head, tail, len(mid), bytes.Count(mid, []byte{'\n'}), tail)
	out.Write(in[len(in)-tail:])
	return out.Bytes()
}

// TestCappedKeepsHeadAndTail writes random lines in random chunk sizes
// and compares the log with the head, the note and the tail computed
// directly from the input.
func TestCappedKeepsHeadAndTail(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 300; round++ {
		head, tail := r.IntN(200), r.IntN(200)
		var in bytes.Buffer
		for n := r.IntN(2000); in.Len() < n; {
			fmt.Fprintf(&in, "line %d %s\n", in.Len(), strings.Repeat("x", r.IntN(40)))
		}
		var out bytes.Buffer
		c := NewCapped(&out, int64(head), int64(tail), nil)
		for b := in.Bytes(); len(b) > 0; {
			k := min(len(b), 1+r.IntN(3*max(tail, 1)))
			if n, err := c.Write(b[:k]); n != k || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			b = b[k:]
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if want := expected(in.Bytes(), head, tail); !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("round %d (head %d, tail %d, %d bytes in):\ngot  %q\nwant %q", round, head, tail, in.Len(), out.Bytes(), want)
		}
	}
}

type failing struct{ n int }

func (f *failing) Write(b []byte) (int, error) {
	f.n++
	return 0, errors.New("no space left on device")
}

// TestCappedReportsSinkErrorOnce: a failing sink never fails the writer
// (the worker's stderr must not stall), is reported once, and is not
// written to again.
func TestCappedReportsSinkErrorOnce(t *testing.T) {
	sink := &failing{}
	var reported []error
	c := NewCapped(sink, 10, 10, func(err error) { reported = append(reported, err) })
	for i := 0; i < 5; i++ {
		if n, err := c.Write([]byte("0123456789abc\n")); n != 14 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := c.Close(); err == nil {
		t.Fatal("Close: no error from a failing sink")
	}
	if len(reported) != 1 || sink.n != 1 {
		t.Fatalf("reported %v, sink written %d times; want one each", reported, sink.n)
	}
}

func TestTailKeepsLastLines(t *testing.T) {
	var out bytes.Buffer
	tl := NewTail(&out, 2)
	fmt.Fprint(tl, "one\ntwo\nthr")
	fmt.Fprint(tl, "ee\nfour\n")
	if got := tl.String(); got != "three\nfour" {
		t.Fatalf("String = %q", got)
	}
	if got := tl.Last(); got != "four" {
		t.Fatalf("Last = %q", got)
	}
	if out.String() != "one\ntwo\nthree\nfour\n" {
		t.Fatalf("forwarded %q", out.String())
	}
	fmt.Fprint(tl, "five, unfinished")
	if got := tl.Last(); got != "five, unfinished" {
		t.Fatalf("Last = %q", got)
	}
}
