package nemesis

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/jsonl"
)

// A schedule as data (schedule.json): every run records each fault the
// nemesis injects as one entry, and a run given such a file (Config.Follow)
// injects exactly its entries instead of drawing faults. An entry names
// its fault, whose selector chooses the target afresh when the entry is
// followed (process ids and timing differ between runs); what it hit is
// recorded, never replayed.
//
// The file is JSON lines, one entry a line, written as the nemesis acts:
// each line reaches the kernel in one write, so a controller that dies
// leaves every entry it injected but the one in flight, and a line cut
// off at most (the reader refuses it, naming the line).

// Duration is a duration in a schedule, written as Go writes it
// ("1.5s"), so that a schedule reads and edits by hand.
type Duration time.Duration

// MarshalJSON writes d as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a string time.ParseDuration accepts.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"1.5s\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// Entry is one fault of a schedule.
type Entry struct {
	// Offset is when the injection starts, from the run's first client
	// operation (Origin).
	Offset Duration `json:"offset"`
	// Fault is the --nemesis name.
	Fault string `json:"fault"`
	// Selector is how the fault chooses its target (Selector(Fault)); a
	// file may leave it out, and one that gives another is refused.
	Selector string   `json:"selector,omitempty"`
	Hold     Duration `json:"hold"`

	// What the injection hit, as the history's completion of the start
	// records it: Outcome is ok (the effect verified), info (not
	// verified) or fail (nothing done: no target); Target, its process
	// and pid, and the error. Recorded only: following ignores them.
	Outcome       string `json:"outcome,omitempty"`
	Target        string `json:"target,omitempty"`
	TargetProcess *int   `json:"target_process,omitempty"`
	PID           int    `json:"pid,omitempty"`
	Error         string `json:"error,omitempty"`
}

// Plan is a schedule to follow: its entries in the order of their
// offsets.
type Plan struct {
	Entries []Entry `json:"entries"`
}

// Faults are the distinct faults of p, sorted; "none" for an empty plan,
// as --nemesis says it.
func (p *Plan) Faults() []string {
	var out []string
	for _, e := range p.Entries {
		out = append(out, e.Fault)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// Last is the last entry; false for an empty plan.
func (p *Plan) Last() (Entry, bool) {
	if len(p.Entries) == 0 {
		return Entry{}, false
	}
	return p.Entries[len(p.Entries)-1], true
}

// ReadPlan reads and checks a schedule file (ParsePlan).
func ReadPlan(path string) (*Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	defer f.Close()
	return ParsePlan(f, path)
}

// maxLine bounds one line of a schedule: an entry is a few hundred bytes.
const maxLine = 1 << 20

// ParsePlan reads a schedule (JSON lines; blank lines are skipped) and
// checks every entry: it parses, with no field this build does not know;
// its fault is registered and its selector, if given, is the fault's;
// offset and hold are not negative; offsets do not go back. The first
// problem is returned naming the file (name) and the line.
func ParsePlan(r io.Reader, name string) (*Plan, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	p := &Plan{Entries: []Entry{}}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		e, err := parseEntry(b)
		if err == nil {
			err = p.check(e)
		}
		if err != nil {
			return nil, fmt.Errorf("schedule %s line %d: %w", name, line, err)
		}
		p.Entries = append(p.Entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("schedule %s line %d: %w", name, line+1, err)
	}
	return p, nil
}

// parseEntry decodes one line, refusing unknown fields (a misspelt
// "ofset" must not become an offset of 0) and anything after the object.
func parseEntry(b []byte) (Entry, error) {
	var e Entry
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, fmt.Errorf("not a schedule entry: %w", err)
	}
	if dec.More() {
		return e, errors.New("not a schedule entry: more than one JSON value on the line")
	}
	return e, nil
}

// check refuses e as the next entry of p.
func (p *Plan) check(e Entry) error {
	if e.Fault == "" {
		return errors.New("no fault")
	}
	want, known := Selector(e.Fault)
	if !known {
		return fmt.Errorf("unknown fault %q (known: %s)", e.Fault, strings.Join(Names()[2:], ", "))
	}
	if e.Selector != "" && e.Selector != want {
		return fmt.Errorf("fault %s selects %q, not %q", e.Fault, want, e.Selector)
	}
	if e.Offset < 0 || e.Hold < 0 {
		return fmt.Errorf("offset %s, hold %s: neither may be negative", time.Duration(e.Offset), time.Duration(e.Hold))
	}
	if last, ok := p.Last(); ok && e.Offset < last.Offset {
		return fmt.Errorf("offsets out of order: %s comes after %s", time.Duration(e.Offset), time.Duration(last.Offset))
	}
	return nil
}

// EntryLog is where a scheduler writes each entry as it injects it.
type EntryLog interface {
	Add(Entry) error
}

// PlanLog writes a run's schedule.json.
type PlanLog struct{ w *jsonl.Writer }

// CreatePlanLog starts path, emptied when trunc (appended to otherwise: a
// resumed soak goes on in its file).
func CreatePlanLog(path string, trunc bool) (*PlanLog, error) {
	w, err := jsonl.Create(path, "schedule", trunc)
	if err != nil {
		return nil, err
	}
	return &PlanLog{w: w}, nil
}

// Add appends e as one line.
func (l *PlanLog) Add(e Entry) error { return l.w.Write(e) }

// Close fsyncs and closes the file.
func (l *PlanLog) Close() error { return l.w.Close() }

// entryOf is the schedule entry of an injection recorded as the start's
// completion t with value v and error text errText.
func entryOf(name string, offset, hold time.Duration, t history.Type, v history.Value, errText string) Entry {
	sel, _ := Selector(name)
	return Entry{Offset: Duration(offset.Round(time.Millisecond)), Fault: name, Selector: sel, Hold: Duration(hold),
		Outcome: string(t), Target: v.Target, TargetProcess: v.TargetProcess, PID: v.PID, Error: errText}
}

// Origin is the moment a schedule's offsets count from: the run's first
// client operation, which the runner marks. Until it is marked an entry
// is recorded at offset 0, and a schedule followed waits for it.
type Origin struct {
	once sync.Once
	at   time.Time
	set  chan struct{}
}

// NewOrigin returns an origin not yet marked.
func NewOrigin() *Origin { return &Origin{set: make(chan struct{})} }

// Mark sets the origin to now, the first time only.
func (o *Origin) Mark() {
	o.once.Do(func() {
		o.at = time.Now()
		close(o.set)
	})
}

// At is the origin; false while not marked.
func (o *Origin) At() (time.Time, bool) {
	select {
	case <-o.set:
		return o.at, true
	default:
		return time.Time{}, false
	}
}

// Wait returns the origin once it is marked; false if ctx ends first.
func (o *Origin) Wait(ctx context.Context) (time.Time, bool) {
	select {
	case <-o.set:
		return o.at, true
	case <-ctx.Done():
		return time.Time{}, false
	}
}

// WritePlan writes entries as a schedule file that chaos run --schedule
// follows: what to inject only, not what an earlier run's injections hit.
func WritePlan(path string, entries []Entry) error {
	l, err := CreatePlanLog(path, true)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := l.Add(Entry{Offset: e.Offset, Fault: e.Fault, Selector: e.Selector, Hold: e.Hold}); err != nil {
			l.Close()
			return err
		}
	}
	return l.Close()
}
