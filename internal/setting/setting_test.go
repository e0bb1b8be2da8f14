package setting

import (
	"errors"
	"testing"
)

// TestNames: a setting is named in words unless the command names it,
// and what the command does not name stays in words.
func TestNames(t *testing.T) {
	for field, want := range map[string]string{"SessionTimeout": "session timeout", "ZK": "zk", "SSHKnownHosts": "ssh known hosts",
		"LockRoot": "lock root", "PauseFor": "pause", "ResultsDir": "results", "Addr": "address"} {
		if got := Name(field); got != want {
			t.Errorf("Name(%q) = %q, want %q", field, got, want)
		}
	}
	Register(func(field string) string {
		if field == "SessionTimeout" {
			return "--session-timeout"
		}
		return ""
	})
	t.Cleanup(func() { Register(nil) })
	if got := Name("SessionTimeout"); got != "--session-timeout" {
		t.Errorf("named by the command: %q", got)
	}
	if got := Name("TimeLimit"); got != "time limit" {
		t.Errorf("not named by the command: %q", got)
	}
	if got := Names(", ", "SessionTimeout", "TimeLimit"); got != "--session-timeout, time limit" {
		t.Errorf("Names: %q", got)
	}
}

// TestFieldErrors: each way of refusing a setting keeps the field at
// fault and says the setting first, with its value when given.
func TestFieldErrors(t *testing.T) {
	cause := errors.New("no such thing")
	for _, tc := range []struct {
		err   error
		field string
		text  string
	}{
		{Err("Net", "", cause), "Net", "net: no such thing"},
		{Err("Net", `"wifi"`, cause), "Net", `net "wifi": no such thing`},
		{Errorf("Workers", "0", "must be 1..%d", 200), "Workers", "workers 0: must be 1..200"},
		{Refused("Hold", "%s and %s must not be negative", Name("Hold"), Name("Think")), "Hold", "hold and think must not be negative"},
	} {
		var fe FieldError
		if !errors.As(tc.err, &fe) || fe.Field != tc.field || tc.err.Error() != tc.text {
			t.Errorf("got %#v (%q), want a FieldError of %s saying %q", fe, tc.err, tc.field, tc.text)
		}
	}
	if !errors.Is(Err("Net", "", cause), cause) {
		t.Error("Err does not wrap its cause")
	}
}
