package runner

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unicode"
)

// A refused setting is named by its Config field, never by a flag: the
// flags are the command's (cmd/chaos), which tells the runner how to
// name each field in what it says (NameSettings). Without it a field is
// named in words: SessionTimeout is "session timeout".

// FieldError is a setting of Config that is refused before anything
// starts: Field is the Config field at fault; the message names it as
// the command does.
type FieldError struct {
	Field string
	Err   error
}

func (e FieldError) Error() string { return e.Err.Error() }
func (e FieldError) Unwrap() error { return e.Err }

// settingNamer is how a field is named in messages (NameSettings).
var settingNamer atomic.Pointer[func(field string) string]

// NameSettings has every message of the runner name a Config field as
// name(field) says (a command's flag for it), falling back to words where
// name returns "". Call it once, before any run.
func NameSettings(name func(field string) string) { settingNamer.Store(&name) }

// Setting is how messages name the Config field field.
func Setting(field string) string {
	if f := settingNamer.Load(); f != nil {
		if s := (*f)(field); s != "" {
			return s
		}
	}
	if s, ok := plainNames[field]; ok {
		return s
	}
	return inWords(field)
}

// plainNames are the fields whose Go names read badly as words.
var plainNames = map[string]string{
	"PauseFor":    "pause",
	"ResultsDir":  "results folder",
	"TickTime":    "tick",
	"StopAtFirst": "stopping at the first violation",
	// Resume is no field: it is carrying a killed soak on (Resume).
	"Resume": "resuming",
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

// fieldErr is field refused for err, with its value shown when value
// is not "": "<setting> <value>: <err>".
func fieldErr(field, value string, err error) error {
	return FieldError{Field: field, Err: fmt.Errorf("%s: %w", named(field, value), err)}
}

// fieldErrf is fieldErr with the reason formatted.
func fieldErrf(field, value, format string, a ...any) error {
	return FieldError{Field: field, Err: fmt.Errorf("%s: %s", named(field, value), fmt.Sprintf(format, a...))}
}

// fieldMsg is field refused with a message of its own (which names the
// setting with Setting).
func fieldMsg(field, format string, a ...any) error {
	return FieldError{Field: field, Err: fmt.Errorf(format, a...)}
}

func named(field, value string) string {
	if value == "" {
		return Setting(field)
	}
	return Setting(field) + " " + value
}
