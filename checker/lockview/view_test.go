package lockview

import (
	"testing"

	"github.com/zkchaos/zkchaos/history"
)

func TestSameSession(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"0x100000c61ad0003", "0X100000C61AD0003", true},
		{"0x00ab", "ab", true},
		{"0xab", "0xac", false},
		{"", "", false},
		{"0x0", "0", false},
	} {
		if got := SameSession(c.a, c.b); got != c.same {
			t.Errorf("SameSession(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func session(t int64, p history.Process, state, id string) Instant {
	return Instant{Process: p, F: history.FSession, Time: t, Value: &history.Value{State: state, Session: id}}
}

// TestSessionAt: a process's session is its last connected one, none
// after it expired or closed it; sessions it left can never be its
// current one, whatever the history does not say.
func TestSessionAt(t *testing.T) {
	v := View{Instants: []Instant{
		session(10, 1, StateConnected, "0xa"),
		session(20, 1, StateExpired, "0xa"),
		session(30, 1, StateConnected, "0xb"),
		session(40, 1, StateClosed, "0xb"),
		session(15, 2, StateConnected, "0xc"),
	}}
	for _, c := range []struct {
		at       int64
		id       string
		may, not []string
	}{
		{5, "", []string{"0xa", "0xb"}, nil},
		{12, "0xa", []string{"0xa", ""}, []string{"0xb", "0xc"}},
		{25, "", []string{"0xb"}, []string{"0xa"}},
		{35, "0xb", []string{"0xb"}, []string{"0xa"}},
		{45, "", []string{"0xd"}, []string{"0xa", "0xb"}},
	} {
		s := v.SessionAt(1, c.at)
		if s.ID != c.id {
			t.Errorf("at %d: session %q, want %q", c.at, s.ID, c.id)
		}
		for _, id := range c.may {
			if !s.May(id) {
				t.Errorf("at %d: %q ruled out", c.at, id)
			}
		}
		for _, id := range c.not {
			if s.May(id) {
				t.Errorf("at %d: %q allowed", c.at, id)
			}
		}
	}
}
