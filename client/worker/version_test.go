package worker

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestChangesNumbered: the versions after the first are 2..Protocol, in
// order, each with a date and a text, so ChangesSince cannot skip one.
func TestChangesNumbered(t *testing.T) {
	if len(Changes) != Protocol-1 {
		t.Fatalf("%d changes for protocol %d; want one per version after the first", len(Changes), Protocol)
	}
	for i, c := range Changes {
		if c.Version != i+2 || len(c.Date) != len("2006-01-02") || c.What == "" {
			t.Errorf("change %d: %+v", i, c)
		}
	}
}

// TestVersionNotice: the current version says nothing; an older one
// names exactly the changes after it; none names every change; a newer
// one says so and names none.
func TestVersionNotice(t *testing.T) {
	if n := VersionNotice(Protocol); n != "" {
		t.Errorf("current version: notice %q, want none", n)
	}
	old := VersionNotice(2)
	for _, want := range []string{"protocol 2", "ZKCHAOS_ZK_AUTH", "ZKCHAOS_REGISTER_SECRET", "Authorization: Bearer", fmt.Sprintf("%d (", Protocol)} {
		if !strings.Contains(old, want) {
			t.Errorf("version 2: notice lacks %q: %s", want, old)
		}
	}
	if strings.Contains(old, "2 (2026") {
		t.Errorf("version 2: notice names its own version as a change: %s", old)
	}
	none := VersionNotice(0)
	if !strings.Contains(none, "names no protocol version") || !strings.Contains(none, "2 (") || len(ChangesSince(0)) != len(Changes) {
		t.Errorf("no version: notice %s", none)
	}
	if n := VersionNotice(Protocol + 1); !strings.Contains(n, "newer") || strings.Contains(n, "ZKCHAOS_ZK_AUTH") {
		t.Errorf("newer version: notice %s", n)
	}
	if len(ChangesSince(Protocol)) != 0 {
		t.Errorf("changes since the current version: %v", ChangesSince(Protocol))
	}
}

// TestVersionsDocumented: docs/worker-protocol.md's table of versions
// has a row for each version, with its date, and says which is current.
func TestVersionsDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/worker-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	rows := []string{"| 1 | 2026-11-29 |"}
	for _, c := range Changes {
		rows = append(rows, fmt.Sprintf("| %d | %s |", c.Version, c.Date))
	}
	for _, r := range rows {
		if !strings.Contains(doc, r) {
			t.Errorf("docs/worker-protocol.md lacks the row %q", r)
		}
	}
	if want := fmt.Sprintf(`"protocol":%d`, Protocol); !strings.Contains(doc, want) {
		t.Errorf("docs/worker-protocol.md's hello does not show the current version (%s)", want)
	}
}
