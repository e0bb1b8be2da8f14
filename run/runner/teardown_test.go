package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestTeardownJudgesEachError: a cancelled context is excused only during
// a hard stop, and never hides another failure joined with it (a failed
// namespace removal used to be dropped whenever any error mentioned
// "context canceled").
func TestTeardownJudgesEachError(t *testing.T) {
	cancelled := fmt.Errorf("stop ensemble: %w", context.Canceled)
	netErr := errors.New("remove run network: ip netns del zkc3-w1: Device or resource busy")
	hardStopped, stop := context.WithCancel(context.Background())
	stop()
	cases := []struct {
		hard context.Context
		errs []error
		want string // "" for no failure
	}{
		{hardStopped, []error{cancelled}, ""},
		{hardStopped, []error{cancelled, netErr}, "ip netns del"},
		{context.Background(), []error{cancelled}, "context canceled"},
		{context.Background(), []error{netErr}, "ip netns del"},
		{context.Background(), nil, ""},
	}
	for i, tc := range cases {
		err := newTeardown(testState(t, tc.hard), nil).failures(tc.errs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("case %d: %v judged a failure", i, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("case %d: got %v, want a failure naming %q", i, err, tc.want)
		}
	}
}
