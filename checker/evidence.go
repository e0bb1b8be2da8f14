package checker

import (
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// FirstViolation reads the convention every checker that finds violations
// follows: first_violation_time_ns on the run clock (or, for the checkers
// of the register's apply log, first_violation_after_ns from the
// register's wall clock). Nil when the details name none. test-all's time
// to first violation and the compare page read it here, so the two agree.
func FirstViolation(r Result) *time.Duration {
	var d struct {
		Time  *int64 `json:"first_violation_time_ns"`
		After *int64 `json:"first_violation_after_ns"`
	}
	if r.DecodeDetails(&d) != nil {
		return nil
	}
	for _, p := range []*int64{d.Time, d.After} {
		if p != nil {
			v := time.Duration(*p)
			return &v
		}
	}
	return nil
}

// Tally counts a result's violations by kind, from the conventions the
// checkers' details follow, so a page can compare runs checker by checker
// without knowing each checker's evidence type. The first convention the
// details use decides:
//
//   - violation_counts or problem_counts: a map of kind to count (exact
//     even when the evidence list was cut short);
//   - fields named <thing>_count: one kind per field ("overlaps",
//     "false releases", "violations"), exact as well (excused_count,
//     what a checker forgave, is not one);
//   - a list of evidence objects with a "kind" (liveness's stalls);
//   - failing_keys (the porcupine checkers): keys not linearizable.
//
// Kinds with no violation are left out; nil means none found.
func Tally(r Result) map[string]int {
	var d map[string]json.RawMessage
	if r.DecodeDetails(&d) != nil {
		return nil
	}
	for _, try := range []func(map[string]json.RawMessage) (map[string]int, bool){tallyMaps, tallyCountFields, tallyKinds, tallyFailingKeys} {
		if out, ok := try(d); ok {
			return nonZero(out)
		}
	}
	return nil
}

func tallyMaps(d map[string]json.RawMessage) (map[string]int, bool) {
	for _, k := range []string{"violation_counts", "problem_counts"} {
		var m map[string]int
		if raw, ok := d[k]; ok && json.Unmarshal(raw, &m) == nil {
			return m, true
		}
	}
	return nil, false
}

func tallyCountFields(d map[string]json.RawMessage) (map[string]int, bool) {
	out := map[string]int{}
	found := false
	for k, raw := range d {
		thing, ok := strings.CutSuffix(k, "_count")
		var n int
		// Excused overlaps are the evidence a checker forgave, not
		// violations.
		if !ok || thing == "excused" || json.Unmarshal(raw, &n) != nil {
			continue
		}
		found = true
		out[strings.ReplaceAll(thing, "_", " ")+"s"] = n
	}
	return out, found
}

func tallyKinds(d map[string]json.RawMessage) (map[string]int, bool) {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first list with kinds, the same every time
	for _, k := range keys {
		raw := d[k]
		var list []struct {
			Kind *string `json:"kind"`
		}
		if json.Unmarshal(raw, &list) != nil || len(list) == 0 || list[0].Kind == nil {
			continue
		}
		out := map[string]int{}
		for _, e := range list {
			if e.Kind != nil {
				out[*e.Kind]++
			}
		}
		return out, true
	}
	return nil, false
}

func tallyFailingKeys(d map[string]json.RawMessage) (map[string]int, bool) {
	var keys []string
	raw, ok := d["failing_keys"]
	if !ok || json.Unmarshal(raw, &keys) != nil {
		return nil, false
	}
	return map[string]int{"keys not linearizable": len(keys)}, true
}

func nonZero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range m {
		if n > 0 {
			out[k] = n
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
