// Package slowest reads the stream of `go test -json` that make test
// runs: it prints what go test would have printed without -json (each
// package's ok line, the output of every failing test, build errors), and
// then the slowest packages and tests, so that the suite's time budget is
// in view at the end of every run. The stream's failures make the exit
// status: a failed test or package, a package that did not build, a
// package the stream ended inside.
package slowest

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Event is one line of the stream (cmd/test2json's TestEvent), the fields
// read here.
type Event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
	// ImportPath names the package of a build-output or build-fail event,
	// which carry no Package.
	ImportPath string
	// FailedBuild is set on the fail of a package that did not build.
	FailedBuild string
}

// Timing is how long a package or a top-level test took; a test's time
// leaves out its waits for run tokens (WaitLog).
type Timing struct {
	Package string
	Test    string // "" for a package
	Seconds float64
}

// Summary is what the stream said.
type Summary struct {
	// Failed are the packages that failed (a test, the build, the test
	// binary) or never ended, in the order they ended.
	Failed []string
	// Packages and Tests are every package that ran tests and every
	// top-level test that ended, slowest first. A subtest's time is in its
	// parent's.
	Packages []Timing
	Tests    []Timing
	// TokenTime is the run tokens' time held over the whole stream
	// (HoldLog): tokens × time.
	TokenTime time.Duration
	// Holders are the top-level tests that held run tokens, each with its
	// tokens × seconds (its subtests' holds included), most first: where
	// the floor TokenTime puts on the suite comes from.
	Holders []Timing
}

// line is one output line of a package, with the test it belongs to (""
// for the package's own lines: its ok or FAIL line, what TestMain prints).
type line struct{ test, text string }

// pkgState is a package between its first event and its end.
type pkgState struct {
	lines []line
	// ended holds each test's final action (pass, fail, skip); a test
	// missing from it never ended (the binary crashed or timed out).
	ended map[string]string
}

type reader struct {
	w io.Writer
	// waits are the run-token waits logged by each top-level test, by
	// package and test; holds the token time each held.
	waits map[[2]string]time.Duration
	holds map[[2]string]time.Duration
	pkgs  map[string]*pkgState
	order []string // packages in the order first seen, for the ones left at EOF
	sum   Summary
}

// Read reads the stream from r to its end, writing to w as go test
// without -json would, and returns what it said. Lines that are not JSON
// are written as they are. The error is r's or w's.
func Read(r io.Reader, w io.Writer) (Summary, error) {
	rd := &reader{w: w, pkgs: map[string]*pkgState{},
		waits: map[[2]string]time.Duration{}, holds: map[[2]string]time.Duration{}}
	br := bufio.NewReader(r)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			if werr := rd.line(b); werr != nil {
				return rd.sum, fmt.Errorf("write: %w", werr)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rd.sum, fmt.Errorf("read the go test -json stream: %w", err)
		}
	}
	if err := rd.unfinished(); err != nil {
		return rd.sum, fmt.Errorf("write: %w", err)
	}
	for k, d := range rd.holds {
		rd.sum.Holders = append(rd.sum.Holders, Timing{k[0], k[1], d.Seconds()})
	}
	rank(rd.sum.Packages)
	rank(rd.sum.Tests)
	rank(rd.sum.Holders)
	return rd.sum, nil
}

// line handles one line of the stream.
func (rd *reader) line(b []byte) error {
	var ev Event
	if err := json.Unmarshal(b, &ev); err != nil || ev.Action == "" {
		_, werr := rd.w.Write(b)
		return werr
	}
	switch {
	case ev.Action == "build-output" || ev.Package == "" && ev.Action == "output":
		// Printed as they come: go test prints build errors before the
		// package's FAIL line, and its own messages have no package.
		_, err := io.WriteString(rd.w, ev.Output)
		return err
	case ev.Package == "":
		return nil
	}
	p := rd.pkg(ev.Package)
	switch ev.Action {
	case "output":
		p.lines = append(p.lines, line{ev.Test, ev.Output})
		if ev.Test != "" {
			key := [2]string{ev.Package, topLevel(ev.Test)}
			rd.waits[key] += waitIn(ev.Output)
			if held := heldIn(ev.Output); held > 0 {
				rd.holds[key] += held
				rd.sum.TokenTime += held
			}
		}
	case "pass", "fail", "skip":
		if ev.Test != "" {
			p.ended[ev.Test] = ev.Action
			if !strings.Contains(ev.Test, "/") {
				waited := rd.waits[[2]string{ev.Package, ev.Test}].Seconds()
				rd.sum.Tests = append(rd.sum.Tests, Timing{ev.Package, ev.Test, max(0, ev.Elapsed-waited)})
			}
			return nil
		}
		return rd.end(ev)
	}
	return nil
}

func (rd *reader) pkg(name string) *pkgState {
	p, ok := rd.pkgs[name]
	if !ok {
		p = &pkgState{ended: map[string]string{}}
		rd.pkgs[name] = p
		rd.order = append(rd.order, name)
	}
	return p
}

// end is a package's last event: its lines are printed as go test would
// (a passing package's ok line only; a failing one's own lines and every
// line of a test that failed or never ended) and it is timed.
func (rd *reader) end(ev Event) error {
	p := rd.pkgs[ev.Package]
	delete(rd.pkgs, ev.Package)
	failed := ev.Action == "fail"
	if failed {
		rd.sum.Failed = append(rd.sum.Failed, ev.Package)
	}
	// A skipped package had no test files, a failed build ran nothing:
	// neither is timed.
	if ev.Action != "skip" && ev.FailedBuild == "" {
		rd.sum.Packages = append(rd.sum.Packages, Timing{Package: ev.Package, Seconds: ev.Elapsed})
	}
	var b strings.Builder
	for _, l := range p.lines {
		if shown(l, p.ended, failed) {
			b.WriteString(l.text)
		}
	}
	_, err := io.WriteString(rd.w, b.String())
	return err
}

// shown says whether go test without -json prints l: of a passing package
// only the summary line ("ok  \t..." or "?   \t..."), of a failing one
// everything but the lines of tests that passed or were skipped.
func shown(l line, ended map[string]string, failed bool) bool {
	if !failed {
		return l.test == "" && (strings.HasPrefix(l.text, "ok  \t") || strings.HasPrefix(l.text, "?   \t"))
	}
	if l.test == "" {
		return true
	}
	end, ok := ended[l.test]
	return !ok || end == "fail"
}

// unfinished prints, whole, each package the stream ended inside (go test
// killed, or the stream cut) and counts it failed.
func (rd *reader) unfinished() error {
	for _, name := range rd.order {
		p, ok := rd.pkgs[name]
		if !ok {
			continue
		}
		rd.sum.Failed = append(rd.sum.Failed, name)
		var b strings.Builder
		for _, l := range p.lines {
			b.WriteString(l.text)
		}
		fmt.Fprintf(&b, "FAIL\t%s: the stream ended before the package did\n", name)
		if _, err := io.WriteString(rd.w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// rank sorts slowest first; equal times by name, so the order is stable.
func rank(ts []Timing) {
	slices.SortStableFunc(ts, func(a, b Timing) int {
		if c := cmp.Compare(b.Seconds, a.Seconds); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Package, b.Package), cmp.Compare(a.Test, b.Test))
	})
}
