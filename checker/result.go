package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
)

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
		Elapsed: time.Duration(math.Round(h.ElapsedMS * float64(time.Millisecond)))}
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
	r, err := DecodeResults(b)
	if err != nil {
		return Results{}, fmt.Errorf("read results %s: %w", path, err)
	}
	return r, nil
}

// DecodeResults parses the bytes of a results.json, for readers that do
// not open it by path (the pages served from an os.Root).
func DecodeResults(b []byte) (Results, error) {
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return Results{}, err
	}
	r.Order = r.Names()
	return r, nil
}

// Names are the checkers of r in the order they ran, or by name when r
// does not say (results written before Order existed, or made by hand).
func (r Results) Names() []string {
	if len(r.Order) > 0 {
		return r.Order
	}
	names := make([]string, 0, len(r.Checkers))
	for name := range r.Checkers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
