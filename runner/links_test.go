package runner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zkchaos/zkchaos/store"
)

// TestReportLinks: the report links the run folder's files that are
// there, and only those (never nil, which would bring back
// report.DefaultLinks).
func TestReportLinks(t *testing.T) {
	run := &store.Run{Dir: t.TempDir()}
	if links := reportLinks(run); links == nil || len(links) != 0 {
		t.Fatalf("links of an empty folder: %#v", links)
	}
	for _, f := range []string{store.HistoryFile, store.LogFile} {
		if err := os.WriteFile(run.Path(f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(run.Dir, store.WorkersDir), 0o755); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range reportLinks(run) {
		got = append(got, l.Href)
	}
	if want := []string{store.HistoryFile, store.LogFile, store.WorkersDir + "/"}; !slices.Equal(got, want) {
		t.Errorf("links %q, want %q", got, want)
	}
}
