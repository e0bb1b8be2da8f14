package slowest

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A test that waits for a run token (internal/testkit/chaostest) logs how
// long, in the words of WaitLog; the tables count a test's time without
// those waits, since what a test over LongTest must justify is its own
// work, not the queue it stood in.

// WaitLog is the line a test logs after waiting d for n run tokens.
func WaitLog(d time.Duration, n int) string {
	return fmt.Sprintf("waited %s for %d run token(s)", d, n)
}

var waitLine = regexp.MustCompile(`waited (\S+) for \d+ run token\(s\)`)

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

// topLevel is the top-level test a (sub)test's name belongs to.
func topLevel(test string) string {
	top, _, _ := strings.Cut(test, "/")
	return top
}
