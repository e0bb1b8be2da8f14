package slowest

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A test that waits for a run token (internal/testkit/chaostest) logs how
// long, in the words of WaitLog; the tables count a test's time without
// those waits, since what a test over LongTest must justify is its own
// work, not the queue it stood in. When it gives its tokens back it logs
// how long it held them (HoldLog): the sum over the suite, divided by
// the tokens, is the least time the suite's real runs can take, whatever
// else runs beside them.

// RunTokens is how many real runs go at once on the machine: two, the
// most the project's CI allows on its 2-core machines, unless
// ZKCHAOS_TEST_RUNS says otherwise. It lives here so that the tokens
// (chaostest) and the table that divides by them agree.
func RunTokens() int {
	if n, err := strconv.Atoi(os.Getenv("ZKCHAOS_TEST_RUNS")); err == nil && n > 0 {
		return n
	}
	return 2
}

// WaitLog is the line a test logs after waiting d for n run tokens.
func WaitLog(d time.Duration, n int) string {
	return fmt.Sprintf("waited %s for %d run token(s)", d, n)
}

// HoldLog is the line a test logs when it gives back n run tokens it
// held for d.
func HoldLog(d time.Duration, n int) string {
	return fmt.Sprintf("held %d run token(s) for %s", n, d)
}

var (
	waitLine = regexp.MustCompile(`waited (\S+) for \d+ run token\(s\)`)
	holdLine = regexp.MustCompile(`held (\d+) run token\(s\) for (\S+)`)
)

// waitIn is the wait an output line logs, or 0.
func waitIn(text string) time.Duration {
	m := waitLine.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		return 0
	}
	return d
}

// heldIn is the token time an output line logs (tokens × time held), or 0.
func heldIn(text string) time.Duration {
	m := holdLine.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	d, derr := time.ParseDuration(m[2])
	if err != nil || derr != nil {
		return 0
	}
	return time.Duration(n) * d
}

// topLevel is the top-level test a (sub)test's name belongs to.
func topLevel(test string) string {
	top, _, _ := strings.Cut(test, "/")
	return top
}
