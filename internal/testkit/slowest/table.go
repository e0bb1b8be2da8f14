package slowest

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// LongTest is the time above which a test must say in a comment why it
// takes that long: a test that slow holds up every `make test`, so its
// cost is to be justified where it is read. The tables mark such tests.
const LongTest = 60.0 // seconds

// WriteTables writes the top slowest packages and tests, names without
// the module prefix, marking tests over LongTest (all of them are listed,
// also beyond top), then the run tokens' time and its top holders, then
// the failed packages.
func (s Summary) WriteTables(w io.Writer, top int, module string) error {
	return s.writeTables(w, top, module, RunTokens())
}

func (s Summary) writeTables(w io.Writer, top int, module string, tokens int) error {
	var b strings.Builder
	short := func(pkg string) string {
		if pkg == strings.TrimSuffix(module, "/") {
			return "."
		}
		return strings.TrimPrefix(pkg, module)
	}
	fmt.Fprintf(&b, "\nslowest packages (%d of %d):\n", min(top, len(s.Packages)), len(s.Packages))
	for _, t := range s.Packages[:min(top, len(s.Packages))] {
		fmt.Fprintf(&b, "%8.1f s  %s\n", t.Seconds, short(t.Package))
	}
	// Every test over LongTest is listed, also beyond the top ones.
	long := 0
	for long < len(s.Tests) && s.Tests[long].Seconds > LongTest {
		long++
	}
	n := max(min(top, len(s.Tests)), long)
	fmt.Fprintf(&b, "slowest tests (%d of %d; %d over %.0f s, marked *: each must say why in a comment):\n",
		n, len(s.Tests), long, LongTest)
	for _, t := range s.Tests[:n] {
		mark := ""
		if t.Seconds > LongTest {
			mark = " *"
		}
		fmt.Fprintf(&b, "%8.1f s  %s %s%s\n", t.Seconds, short(t.Package), t.Test, mark)
	}
	if s.TokenTime > 0 {
		floor := s.TokenTime / time.Duration(tokens)
		fmt.Fprintf(&b, "run tokens held %.0f s in all: at %d real runs at once, the suite takes at least %.0f s\n",
			s.TokenTime.Seconds(), tokens, floor.Seconds())
		fmt.Fprintf(&b, "largest run-token holders (%d of %d; tokens × seconds):\n", min(top, len(s.Holders)), len(s.Holders))
		for _, t := range s.Holders[:min(top, len(s.Holders))] {
			fmt.Fprintf(&b, "%8.1f s  %s %s\n", t.Seconds, short(t.Package), t.Test)
		}
	}
	if len(s.Failed) > 0 {
		names := make([]string, len(s.Failed))
		for i, p := range s.Failed {
			names[i] = short(p)
		}
		fmt.Fprintf(&b, "FAIL: %s\n", strings.Join(names, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Run is make test's filter: the stream from r, go test's usual output
// and then the tables on w. It returns the exit status: 1 when the stream
// showed a failure (or could not be read), else 0.
func Run(r io.Reader, w io.Writer, top int, module string) int {
	sum, err := Read(r, w)
	if werr := sum.WriteTables(w, top, module); werr != nil && err == nil {
		err = fmt.Errorf("write: %w", werr)
	}
	if err != nil {
		fmt.Fprintf(w, "slowest: %v\n", err)
		return 1
	}
	if len(sum.Failed) > 0 {
		return 1
	}
	return 0
}
