package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Bad input to chaos image: a clear error on the first line, exit 255,
// before anything contacts the engine.
func TestImageBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want the subcommand build"},
		{[]string{"pull"}, "want the subcommand build"},
		{[]string{"build", "extra"}, "unexpected arguments"},
		{[]string{"build", "--tag=x"}, "flag provided but not defined"},
	} {
		var out, errb bytes.Buffer
		code := runImage(context.Background(), tc.args, &out, &errb)
		first, _, _ := strings.Cut(errb.String(), "\n")
		if code != exitHarness || !strings.Contains(first, tc.want) || out.Len() != 0 {
			t.Errorf("chaos image %q: exit %d, first line %q, stdout %q; want 255 and %q", tc.args, code, first, out.String(), tc.want)
		}
	}
}
