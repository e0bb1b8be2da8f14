// Package checker turns a run's history and the register's apply log into
// verdicts with evidence (DESIGN.md section 8).
//
// Every checker answers true, false or "unknown". The run's verdict is the
// worst answer among the gating checkers, with Jepsen's order false >
// unknown > true: a corrupted resource must never be hidden by a checker
// that could not decide, and a checker that could not decide (it panicked,
// ran out of time, or lacked the data) must never count as a pass.
package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/register"
	"github.com/zkchaos/zkchaos/store"
)

// Validity is a checker's answer. The zero value is Unknown so that a
// Result nobody filled in can never pass as valid.
type Validity uint8

// The three answers, written in JSON as "unknown", true and false.
const (
	Unknown Validity = iota
	Valid
	Invalid
)

func (v Validity) String() string {
	switch v {
	case Valid:
		return "true"
	case Invalid:
		return "false"
	}
	return "unknown"
}

// MarshalJSON writes Jepsen's encoding: true, false or "unknown".
func (v Validity) MarshalJSON() ([]byte, error) {
	switch v {
	case Valid:
		return []byte("true"), nil
	case Invalid:
		return []byte("false"), nil
	case Unknown:
		return []byte(`"unknown"`), nil
	}
	return nil, fmt.Errorf("marshal validity: bad value %d", uint8(v))
}

// UnmarshalJSON accepts exactly what MarshalJSON writes, so that a damaged
// results.json is noticed rather than read as a pass.
func (v *Validity) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*v = Valid
	case "false":
		*v = Invalid
	case `"unknown"`:
		*v = Unknown
	default:
		return fmt.Errorf("validity must be true, false or \"unknown\", got %s", b)
	}
	return nil
}

// rank orders validities for Merge: higher is worse.
func (v Validity) rank() int {
	switch v {
	case Valid:
		return 0
	case Invalid:
		return 2
	}
	return 1
}

// Merge is Jepsen's merge-valid: false if any is false, else unknown if any
// is unknown, else true. Merging nothing is true, the identity.
func Merge(vs ...Validity) Validity {
	out := Valid
	for _, v := range vs {
		if v.rank() > out.rank() {
			out = v
		}
	}
	return out
}

// Names of the checkers in this package.
const (
	NameDoubleWriter = "double-writer"
	NameStats        = "stats"
)

// DefaultGate is used when the caller names no gating checkers: the
// resource checkers answer the user's real question, "was my data
// corrupted?". mutex does not gate by default: no lease-based lock passes
// it under SIGSTOP of a holder (see mutexmodel.go).
var DefaultGate = []string{NameDoubleWriter, NameRegister}

// Input is everything a checker may look at.
type Input struct {
	History  []history.Event
	ApplyLog []register.Entry
	// StartWall is the run's start on the wall clock (Unix ns), so that
	// apply-log Wall times can be placed on the run's timeline. Zero means
	// not known.
	StartWall int64
	// Budget bounds each checker's run time; a checker over budget is
	// unknown. Zero means only ctx bounds it.
	Budget time.Duration
	// Fencing is the register's mode in the run (test.json "fencing"); the
	// register model depends on it.
	Fencing string
	// Dir is the run folder, where checkers may save pages (porcupine's
	// visualisations); empty means save nothing.
	Dir string
	// MaxViolations bounds the violations kept as evidence per checker
	// (counts stay exact), so that an unfenced soak run cannot produce a
	// results.json nobody can open. 0 means DefaultMaxViolations; negative
	// means no bound.
	MaxViolations int
	// Completion says whether the run finished; nil means not judged (a
	// hand-made history). runner.Check always sets it.
	Completion *Completion
}

// DefaultMaxViolations is the evidence kept when Input.MaxViolations is 0.
const DefaultMaxViolations = 10000

func (in Input) maxViolations() int {
	switch {
	case in.MaxViolations == 0:
		return DefaultMaxViolations
	case in.MaxViolations < 0:
		return int(^uint(0) >> 1)
	}
	return in.MaxViolations
}

// Checker is one named check. Check should watch ctx in long loops; if it
// does not return in time it is reported unknown anyway.
type Checker struct {
	Name  string
	Check func(ctx context.Context, in Input) Result
}

// registry is every checker RunAll runs, in report order. Checkers in other
// files of this package add themselves here.
var registry = []Checker{
	{Name: NameDoubleWriter, Check: CheckDoubleWriter},
	{Name: NameRegister, Check: CheckRegister},
	{Name: NameMutex, Check: CheckMutex},
	{Name: NameLiveness, Check: CheckLiveness},
	{Name: NameGrantOverlap, Check: CheckGrantOverlap},
	{Name: NameTokenOrder, Check: CheckTokenOrder},
	{Name: NameHerd, Check: CheckHerd},
	{Name: NameStats, Check: CheckStats},
}

// Names lists the known checkers, the names a gate may use.
func Names() []string {
	out := make([]string, 0, len(registry))
	for _, c := range registry {
		out = append(out, c.Name)
	}
	return out
}

// ValidateGate rejects a gate naming a checker that does not exist, which
// would otherwise make every run unknown (or, worse, silently ungated).
func ValidateGate(names []string) error {
	return validateGate(names, registry)
}

func validateGate(names []string, cs []Checker) error {
	for _, n := range names {
		if !slices.ContainsFunc(cs, func(c Checker) bool { return c.Name == n }) {
			known := make([]string, 0, len(cs))
			for _, c := range cs {
				known = append(known, c.Name)
			}
			return fmt.Errorf("unknown gating checker %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return nil
}

// Result is one checker's answer. In JSON, Details' fields sit beside
// "valid" in the same object, so results.json reads
// checkers["double-writer"].violations rather than .details.violations.
type Result struct {
	Valid Validity
	// Error says why a checker could not decide (or crashed).
	Error   string
	Elapsed time.Duration
	// Gating is set by RunAll for checkers that count in the verdict.
	Gating bool
	// Details is the evidence: a struct or map that marshals to a JSON
	// object. After ReadResults it is a json.RawMessage; use DecodeDetails.
	Details any
}

type resultHead struct {
	Valid     Validity `json:"valid"`
	Gating    bool     `json:"gating"`
	ElapsedMS float64  `json:"elapsed_ms"`
	Error     string   `json:"error,omitempty"`
}

var headKeys = []string{"valid", "gating", "elapsed_ms", "error"}

// MarshalJSON flattens Details into the result object.
func (r Result) MarshalJSON() ([]byte, error) {
	hb, err := json.Marshal(resultHead{Valid: r.Valid, Gating: r.Gating,
		ElapsedMS: float64(r.Elapsed) / float64(time.Millisecond), Error: r.Error})
	if err != nil {
		return nil, err
	}
	if r.Details == nil {
		return hb, nil
	}
	db, err := json.Marshal(r.Details)
	if err != nil {
		return nil, fmt.Errorf("marshal checker details: %w", err)
	}
	db = bytes.TrimSpace(db)
	switch {
	case string(db) == "null" || string(db) == "{}":
		return hb, nil
	case db[0] != '{':
		// Not an object: it cannot be flattened, so nest it.
		out := append(hb[:len(hb)-1:len(hb)-1], `,"details":`...)
		out = append(out, db...)
		return append(out, '}'), nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(db, &keys); err != nil {
		return nil, fmt.Errorf("marshal checker details: %w", err)
	}
	for _, k := range headKeys {
		if _, ok := keys[k]; ok {
			return nil, fmt.Errorf("marshal checker details: field %q clashes with the result's own", k)
		}
	}
	out := append(hb[:len(hb)-1:len(hb)-1], ',')
	return append(out, db[1:]...), nil
}

// UnmarshalJSON keeps everything but the head fields as raw Details.
func (r *Result) UnmarshalJSON(b []byte) error {
	var h resultHead
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("checker result: %w", err)
	}
	var rest map[string]json.RawMessage
	if err := json.Unmarshal(b, &rest); err != nil {
		return fmt.Errorf("checker result: %w", err)
	}
	for _, k := range headKeys {
		delete(rest, k)
	}
	*r = Result{Valid: h.Valid, Gating: h.Gating, Error: h.Error,
		Elapsed: time.Duration(h.ElapsedMS * float64(time.Millisecond))}
	if len(rest) > 0 {
		db, err := json.Marshal(rest)
		if err != nil {
			return fmt.Errorf("checker result: %w", err)
		}
		r.Details = json.RawMessage(db)
	}
	return nil
}

// DecodeDetails fills v (a pointer, e.g. *DoubleWriterDetails) from the
// evidence, whether the Result came from a checker or from results.json.
func (r Result) DecodeDetails(v any) error {
	if r.Details == nil {
		return fmt.Errorf("decode checker details: none")
	}
	b, ok := r.Details.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(r.Details); err != nil {
			return fmt.Errorf("decode checker details: %w", err)
		}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode checker details: %w", err)
	}
	return nil
}

// Results is results.json.
type Results struct {
	Valid Validity `json:"valid"`
	Gate  []string `json:"gate"`
	// Reasons explains a verdict other than true, one line per gating
	// checker that did not pass.
	Reasons  []string          `json:"reasons,omitempty"`
	Checkers map[string]Result `json:"checkers"`
	// Completion says whether the run finished and how far it got; an
	// incomplete run is never valid.
	Completion *Completion `json:"completion,omitempty"`
	// Order is the order the checkers ran in, for reports (JSON objects
	// have none).
	Order     []string  `json:"order"`
	CheckedAt time.Time `json:"checked_at"`
	ElapsedMS float64   `json:"elapsed_ms"`
}

// RunAll runs every checker concurrently and merges the gating ones. It
// always returns a verdict: crashes, overruns and cancellation become
// unknown results, and a gate naming an absent checker makes the verdict
// unknown (call ValidateGate first to refuse such a gate up front).
func RunAll(ctx context.Context, in Input, gate []string) Results {
	return runAll(ctx, in, gate, registry)
}

func runAll(ctx context.Context, in Input, gate []string, cs []Checker) Results {
	start := time.Now()
	if len(gate) == 0 {
		gate = DefaultGate
	}
	gate = slices.Clone(gate)
	res := Results{Gate: gate, Checkers: make(map[string]Result, len(cs)), CheckedAt: start.UTC()}
	type done struct {
		i int
		r Result
	}
	ch := make(chan done, len(cs))
	for i, c := range cs {
		go func() { ch <- done{i, runOne(ctx, c, in)} }()
	}
	for range cs {
		d := <-ch
		res.Checkers[cs[d.i].Name] = d.r
	}
	for _, c := range cs {
		res.Order = append(res.Order, c.Name)
	}
	var vs []Validity
	for _, name := range gate {
		r, ok := res.Checkers[name]
		if !ok {
			vs = append(vs, Unknown)
			res.Reasons = append(res.Reasons, fmt.Sprintf("%s: gating checker does not exist", name))
			continue
		}
		r.Gating = true
		res.Checkers[name] = r
		vs = append(vs, r.Valid)
		if r.Valid != Valid {
			why := r.Valid.String()
			if r.Error != "" {
				why += ": " + r.Error
			}
			res.Reasons = append(res.Reasons, fmt.Sprintf("%s: %s", name, why))
		}
	}
	res.Valid = Merge(vs...)
	applyCompletion(&res, in.Completion)
	res.ElapsedMS = float64(time.Since(start)) / float64(time.Millisecond)
	return res
}

// runOne isolates a checker: its panic, or its failure to return within
// the budget, becomes an unknown result instead of taking the run down or
// hanging it. A checker that ignores ctx keeps running in the background
// until it returns; its answer is discarded.
//
// When ctx ends, the checker gets a short grace to hand in its own answer,
// because one that watches ctx (the porcupine checkers) then returns an
// unknown with its evidence: which keys were decided, which were not. An
// answer of true that arrives after the budget still counts as unknown.
func runOne(ctx context.Context, c Checker, in Input) Result {
	if in.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.Budget)
		defer cancel()
	}
	start := time.Now()
	out := make(chan Result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				out <- Result{Valid: Unknown, Error: fmt.Sprintf("checker panicked: %v", p),
					Details: map[string]string{"stack": string(debug.Stack())}}
			}
		}()
		out <- c.Check(ctx, in)
	}()
	var r Result
	select {
	case r = <-out:
	case <-ctx.Done():
		over := Result{Valid: Unknown, Error: fmt.Sprintf("checker did not finish: %v", context.Cause(ctx))}
		t := time.NewTimer(grace(in.Budget))
		select {
		case r = <-out:
			if r.Valid == Valid {
				over.Details = r.Details
				r = over
			}
		case <-t.C:
			r = over
		}
		t.Stop()
	}
	r.Elapsed = time.Since(start)
	return r
}

// grace is how long runOne waits for a checker's own answer after its
// budget: a tenth of the budget, between 100 ms and 2 s.
func grace(budget time.Duration) time.Duration {
	return min(2*time.Second, max(100*time.Millisecond, budget/10))
}

// cancelled is how a checker gives up when its context ends.
func cancelled(ctx context.Context) Result {
	return Result{Valid: Unknown, Error: fmt.Sprintf("checker did not finish: %v", context.Cause(ctx))}
}

// WriteResults writes results.json atomically (temporary file, fsync,
// rename), so a reader never sees half a verdict.
func WriteResults(path string, r Results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := store.WriteFileAtomic(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// ReadResults reads a results.json written by WriteResults. Details come
// back raw; use Result.DecodeDetails.
func ReadResults(path string) (Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Results{}, fmt.Errorf("read results: %w", err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return Results{}, fmt.Errorf("read results %s: %w", path, err)
	}
	if len(r.Order) == 0 {
		for name := range r.Checkers {
			r.Order = append(r.Order, name)
		}
		sort.Strings(r.Order)
	}
	return r, nil
}
