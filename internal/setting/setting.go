// Package setting names a run's settings in what the packages say. A
// message names a setting by a field-like name (a field of runner.Config,
// or of another command's config: bench's Clients, serve's Addr), never
// by a flag: the flags are the command's (cmd/chaos), which registers how
// its user knows each setting (Register). Without that a setting is
// named in words: SessionTimeout is "session timeout". So a package
// below cmd/ says "--session-timeout 1s: ..." through chaos run and reads
// the same in its own tests and to another caller, and its text cannot
// drift from the command's flags.
package setting

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unicode"
)

// namer is how a setting is named in messages (Register).
var namer atomic.Pointer[func(field string) string]

// Register has every message name a setting as name(field) says (the
// command's flag for it), falling back to words where name returns "".
// The command calls it once, before anything runs; Register(nil) drops
// it (a test that registered names of its own).
func Register(name func(field string) string) {
	if name == nil {
		namer.Store(nil)
		return
	}
	namer.Store(&name)
}

// Name is how messages name the setting field: as registered, else in
// words.
func Name(field string) string {
	if f := namer.Load(); f != nil {
		if s := (*f)(field); s != "" {
			return s
		}
	}
	if s, ok := plainNames[field]; ok {
		return s
	}
	return inWords(field)
}

// Names are the settings' names, joined by sep.
func Names(sep string, fields ...string) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = Name(f)
	}
	return strings.Join(names, sep)
}

// plainNames are the settings whose field-like names read badly as words.
var plainNames = map[string]string{
	"PauseFor":          "pause",
	"ResultsDir":        "results",
	"TickTime":          "tick",
	"StopAtFirst":       "stopping at the first violation",
	"StopAfterSchedule": "stopping after the schedule",
	// Resume is no field: it is carrying a killed soak on (chaos soak).
	"Resume": "resuming",
	// The addresses chaos serve and a soak's metrics listen on.
	"Addr":        "address",
	"MetricsAddr": "metrics address",
	// CleanupAll is chaos cleanup's sweep of every run, also of those
	// whose controller is alive.
	"CleanupAll": "all",
}

// inWords is a field's name in lower-case words: SessionTimeout is
// "session timeout", ZK "zk".
func inWords(field string) string {
	var b strings.Builder
	r := []rune(field)
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// FieldError is a setting refused before anything starts: Field is the
// setting at fault (a field-like name, as Name takes); the message
// names it as the command does.
type FieldError struct {
	Field string
	Err   error
}

func (e FieldError) Error() string { return e.Err.Error() }
func (e FieldError) Unwrap() error { return e.Err }

// Err is field refused for err, with its value shown when value is not
// "": "<setting> <value>: <err>".
func Err(field, value string, err error) error {
	return FieldError{Field: field, Err: fmt.Errorf("%s: %w", named(field, value), err)}
}

// Errorf is Err with the reason formatted.
func Errorf(field, value, format string, a ...any) error {
	return FieldError{Field: field, Err: fmt.Errorf("%s: %s", named(field, value), fmt.Sprintf(format, a...))}
}

// Refused is field refused with a message of its own, which names the
// settings it speaks of with Name.
func Refused(field, format string, a ...any) error {
	return FieldError{Field: field, Err: fmt.Errorf(format, a...)}
}

func named(field, value string) string {
	if value == "" {
		return Name(field)
	}
	return Name(field) + " " + value
}
