package netns

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestLockWaitIsBounded: iptables' wait for the xtables lock never exceeds
// the caller's deadline (whole seconds, at least one) nor maxLockWait; a
// bare -w would wait forever.
func TestLockWaitIsBounded(t *testing.T) {
	short, c1 := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer c1()
	tiny, c2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer c2()
	long, c3 := context.WithTimeout(context.Background(), time.Hour)
	defer c3()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want []string
	}{
		{"no deadline", context.Background(), []string{"-w", "10"}},
		{"3.5s left", short, []string{"-w", "3"}},
		{"100ms left", tiny, []string{"-w", "1"}},
		{"an hour left", long, []string{"-w", "10"}},
	} {
		if got := lockWait(tc.ctx); !slices.Equal(got, tc.want) {
			t.Errorf("%s: lockWait = %v, want %v", tc.name, got, tc.want)
		}
	}
}
