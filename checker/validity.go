package checker

import (
	"bytes"
	"fmt"
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

// Word is the answer as pages say it and style it: "valid", "invalid" or
// "unknown" (String is the JSON spelling: "true", "false", "unknown").
func (v Validity) Word() string {
	switch v {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
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
