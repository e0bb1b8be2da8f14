package diagnose

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
)

// Dir diagnoses the run folder fsys: its history and its workers' logs.
func Dir(fsys fs.FS) (Diagnosis, error) {
	f, err := fsys.Open(store.HistoryFile)
	if err != nil {
		return Diagnosis{}, fmt.Errorf("diagnose: %w", err)
	}
	defer f.Close()
	h, err := history.Read(f)
	if err != nil {
		return Diagnosis{}, fmt.Errorf("diagnose: %s: %w", store.HistoryFile, err)
	}
	return Of(h.Events, func(p history.Process) string {
		b, err := fs.ReadFile(fsys, store.WorkerLogName(int(p)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("(%v)", err)
		}
		return string(b)
	}), nil
}

// Headline is the diagnosis in one line: what the subject did not do.
func (d Diagnosis) Headline() string {
	if d.Nothing {
		return "the subject could not run: it completed no operation (" + d.Counts() + ")"
	}
	return fmt.Sprintf("the subject could not run: every %s failed (%s)", strings.Join(d.Failed, ", every "), d.counts(d.Failed))
}

// Counts are every kind's operations completed ok of those invoked.
func (d Diagnosis) Counts() string { return d.counts(nil) }

// counts are the kinds' ok of invoked, of only the kinds named (nil:
// every kind).
func (d Diagnosis) counts(only []string) string {
	var parts []string
	for _, k := range d.Kinds {
		if only == nil || slices.Contains(only, k.F) {
			parts = append(parts, fmt.Sprintf("%s: %d of %d ok", k.F, k.OK, k.Invoked))
		}
	}
	if len(parts) == 0 {
		return "none invoked"
	}
	return strings.Join(parts, ", ")
}

// Write tells the diagnosis: the headline, the first errors, the hello's
// version, the stderr tail and the hints, each part only when there is
// something to say.
func (d Diagnosis) Write(w io.Writer) {
	fmt.Fprintf(w, "%s\n", d.Headline())
	if len(d.Errors) > 0 {
		fmt.Fprintln(w, "first errors the subject reported:")
		for _, e := range d.Errors {
			fmt.Fprintf(w, "  %s %s x%d, first by process %s at %s: %s\n", e.F, e.Type, e.Count, e.Process, checker.Seconds(e.Time), e.Text)
		}
	}
	if d.Hello {
		fmt.Fprintf(w, "hello: %s\n", helloVersion(d.Protocol))
	}
	if d.Stderr.Text != "" {
		fmt.Fprintf(w, "stderr of process %s (%s), last lines:\n", d.Stderr.Process, store.WorkerLogName(int(d.Stderr.Process)))
		for _, l := range strings.Split(d.Stderr.Text, "\n") {
			fmt.Fprintf(w, "  | %s\n", l)
		}
	}
	if len(d.Hints) == 0 {
		fmt.Fprintln(w, "no known cause matches these errors: see docs/worker-protocol.md")
		return
	}
	fmt.Fprintln(w, "what the protocol requires that such errors usually mean:")
	for _, h := range d.Hints {
		fmt.Fprintf(w, "  - %s\n", h)
	}
}

func helloVersion(v int) string {
	if v <= 0 {
		return fmt.Sprintf("no protocol version named (this controller's: %d)", worker.Protocol)
	}
	return fmt.Sprintf("protocol %d (this controller's: %d)", v, worker.Protocol)
}

// String is Write's text.
func (d Diagnosis) String() string {
	var b strings.Builder
	d.Write(&b)
	return b.String()
}
