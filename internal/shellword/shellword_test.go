package shellword

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/opt/zk/bin/chaos": "/opt/zk/bin/chaos",
		"--time-limit":      "--time-limit",
		"":                  "''",
		"a b":               "'a b'",
		"it's":              `'it'\''s'`,
		"$HOME":             "'$HOME'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if got := Join("chaos", "run", "--schedule", "/a b/m.json"); got != "chaos run --schedule '/a b/m.json'" {
		t.Errorf("Join: %s", got)
	}
}
