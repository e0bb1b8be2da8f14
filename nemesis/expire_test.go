package nemesis

import (
	"strings"
	"testing"
	"time"
)

// The message of an expiry with no target says what the workers reported,
// not a cause that did not happen.
func TestWhyNotExpirable(t *testing.T) {
	for _, c := range []struct {
		ws   []Worker
		want string
	}{
		{[]Worker{{Process: 0}, {Process: 1}}, "no worker of 2 reported holding a lock within 2s"},
		{[]Worker{{Holding: true}, {Holding: true, Session: 7, Password: []byte("pw")}, {}},
			"2 of 3 workers hold a lock now, 1 of them with their session id and password reported"},
		{[]Worker{{Holding: true, Session: 7}}, "1 of 1 workers hold a lock now, 0 of them"},
	} {
		if got := whyNotExpirable(c.ws, 2*time.Second); !strings.HasPrefix(got, c.want) {
			t.Errorf("whyNotExpirable(%+v) = %q, want it to start %q", c.ws, got, c.want)
		}
	}
}
