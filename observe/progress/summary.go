package progress

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Summary is a soak's periodic line: how long it has run, what it did,
// how often it broke, and how big the controller is, so hours of log
// show a trend at a glance (one line a minute by default).
type Summary struct {
	Status
	// RSS is the controller's resident set in bytes (0: not sampled yet).
	RSS uint64
	// Why is "interval", or "violation" for the line written at once when
	// an online checker finds its first violation.
	Why string
}

// Violations is the total found online so far.
func (s Summary) Violations() int {
	n := 0
	for _, c := range s.Online {
		n += c.Violations
	}
	return n
}

// PerHour is the violations per hour of workload so far (0 before a
// second has passed).
func (s Summary) PerHour() float64 {
	if s.Elapsed < time.Second {
		return 0
	}
	return float64(s.Violations()) / s.Elapsed.Hours()
}

// Attrs are the line's fields, for the run's log:
//
//	msg="soak summary" why=interval elapsed=5m0s ops=12345 ok=12000 fail=300 info=45 faults=20 violations=0 violations_per_hour=0.0 controller_rss_mib=45.2
func (s Summary) Attrs() []any {
	return []any{"why", s.Why, "elapsed", short(s.Elapsed), "ops", s.OK + s.Fail + s.Info,
		"ok", s.OK, "fail", s.Fail, "info", s.Info, "faults", s.Faults,
		"violations", s.Violations(), "violations_per_hour", fmt.Sprintf("%.1f", s.PerHour()),
		"controller_rss_mib", fmt.Sprintf("%.1f", float64(s.RSS)/(1<<20))}
}

// summaryPoll is how often Summarize looks for a first violation: the
// line that reports it comes within this of the online check finding it.
const summaryPoll = 250 * time.Millisecond

// Summarize logs a Summary every interval while ctx lasts, and one at
// once whenever an online checker finds its first violation, and a last
// one (why=end) when ctx ends. rss gives
// the controller's RSS (0 when unknown).
func (t *Tracker) Summarize(ctx context.Context, log *slog.Logger, interval time.Duration, rss func() uint64) {
	if t == nil || interval <= 0 {
		return
	}
	poll := time.NewTicker(min(summaryPoll, interval))
	defer poll.Stop()
	next := time.Now().Add(interval)
	found := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			if st, ok := t.Status(); ok {
				log.Info("soak summary", Summary{Status: st, RSS: rss(), Why: "end"}.Attrs()...)
			}
			return
		case now := <-poll.C:
			st, ok := t.Status()
			if !ok {
				continue
			}
			why := ""
			if !now.Before(next) {
				why, next = "interval", now.Add(interval)
			}
			for _, c := range st.Online {
				if c.Violations > 0 && !found[c.Name] {
					found[c.Name], why = true, "violation"
				}
			}
			if why != "" {
				log.Info("soak summary", Summary{Status: st, RSS: rss(), Why: why}.Attrs()...)
			}
		}
	}
}
