package shrink

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Line is the step in one line, as chaos shrink prints it when it ends.
func (st Step) Line() string {
	return fmt.Sprintf("%s: %s: %s (%s)", st.Step, st.Tried, st.outcome(), st.Took.Round(time.Second))
}

// outcome is what the step's replays showed and whether it was kept.
func (st Step) outcome() string {
	what := fmt.Sprintf("reproduced %d of %d", st.Reproduced, st.Replays)
	if st.Detail != "" {
		what += " (" + st.Detail + ")"
	}
	if st.Kept {
		return what + ", kept"
	}
	return what + ", not kept"
}

// WriteTable writes the steps as a table: each tried, its scenario, what
// it showed and whether it was kept.
func WriteTable(w io.Writer, steps []Step) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tstep\tentries\ttime limit\tworkers\tkeys\treproduced\tkept\ttook\ttried")
	for i, st := range steps {
		kept := "no"
		if st.Kept {
			kept = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%s\t%d/%d\t%s\t%s\t%s\n", i+1, st.Step, st.Entries, st.TimeLimit, st.Workers,
			keys(st.Keys), st.Reproduced, st.Replays, kept, st.Took.Round(time.Second), st.Tried)
	}
	tw.Flush()
}

func keys(k int) string {
	if k == 0 {
		return "-"
	}
	return fmt.Sprint(k)
}

// Summary is the report's before and after in a few lines.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "before: %s\n", scenarioLine(r.Before, r.BeforeEntries))
	if !r.Found() {
		why := "no candidate, nor the original, reproduced at the rate"
		if r.Interrupted {
			why = "the budget ended before a scenario was measured to reproduce at the rate"
		}
		fmt.Fprintf(&b, "after: none: %s (%d steps, %s)\n", why, len(r.Steps), r.Took.Round(time.Second))
		return b.String()
	}
	fmt.Fprintf(&b, "after: %s\n", scenarioLine(*r.After, r.AfterEntries))
	fmt.Fprintf(&b, "rate: reproduced %d of %d replays (wanted %s): %s\n", r.Verdict.Reproduced, r.Verdict.Replays, r.Rate, strings.Join(r.Kinds, ","))
	fmt.Fprintf(&b, "steps: %d tried, %d kept, %s", len(r.Steps), kept(r.Steps), r.Took.Round(time.Second))
	if r.Interrupted {
		b.WriteString(" (stopped at the budget)")
	}
	return b.String() + "\n"
}

func scenarioLine(s Scenario, entries int) string {
	return fmt.Sprintf("%s, time limit %s, %s, %s", count(entries, "entry", "entries"), s.TimeLimit, count(s.Workers, "worker", "workers"), keysLine(s.Keys))
}

func keysLine(k int) string {
	if k == 0 {
		return "no keys"
	}
	return count(k, "key", "keys")
}

func kept(steps []Step) int {
	n := 0
	for _, st := range steps {
		if st.Kept {
			n++
		}
	}
	return n
}
