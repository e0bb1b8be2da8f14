package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/observe/resources"
)

// soakSamples are resource samples every 30 s up to minutes, the
// controller's RSS by rss(minute), three servers.
func soakSamples(minutes float64, rss func(float64) uint64) []resources.Sample {
	var out []resources.Sample
	for m := 0.0; m <= minutes; m += 0.5 {
		n := int64(10 + m)
		s := resources.Sample{TimeNS: int64(m * float64(time.Minute)), Procs: []resources.Proc{
			{Role: resources.RoleController, RSS: rss(m), OpenFiles: 20, HeapLive: rss(m) / 4},
			{Role: resources.RoleWorker, ID: 3, RSS: 8 << 20, OpenFiles: 9}}}
		for id := 1; id <= 3; id++ {
			s.Procs = append(s.Procs, resources.Proc{Role: resources.RoleZooKeeper, ID: id, RSS: 90 << 20, OpenFiles: 60})
			s.Servers = append(s.Servers, resources.Server{ID: id, Znodes: &n, Watches: &n, Ephemerals: &n, DataBytes: int64(m * 1e6)})
		}
		out = append(out, s)
	}
	return out
}

// soakPage is a 30-minute soak's page with the controller's RSS by rss.
func soakPage(t *testing.T, rss func(float64) uint64) string {
	t.Helper()
	var hist []history.Event
	for i := range 60 {
		at := int64(i) * int64(30*time.Second)
		hist = append(hist,
			history.Event{Index: int64(2 * i), Time: at, Process: 1, Type: history.Invoke, F: history.FAcquire, Key: "SKU-1"},
			history.Event{Index: int64(2*i + 1), Time: at + int64(i+1)*1e6, Process: 1, Type: history.OK, F: history.FAcquire, Key: "SKU-1", Value: &history.Value{Token: history.Int64(int64(i + 1))}})
	}
	p := Page{Name: "soak-lock", History: hist, Resources: soakSamples(30, rss)}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := Write(path, p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, b)
}

// TestSoakSection: the section counts per hour, draws every resource
// figure, and says when the controller's RSS grew more than 10% between
// minute 5 and the end, and only then.
func TestSoakSection(t *testing.T) {
	flat := soakPage(t, func(float64) uint64 { return 50 << 20 })
	for _, want := range []string{"Soak", "operations", "60 (", "per hour", "50.0 MiB → 50.0 MiB (+0.0%)", "12.5 MiB → 12.5 MiB (+0.0%)",
		"Controller RSS at each of", "ZooKeeper JVM RSS at each of", "Open files at each of",
		"Znodes, watches and ephemerals per server (mntr) at each of", "Data directory size per server at each of",
		"MiB per hour"} {
		if !strings.Contains(flat, want) {
			t.Errorf("flat soak: no %q in the page", want)
		}
	}
	if strings.Contains(flat, "grew") {
		t.Error("flat soak: the page warns of growth")
	}
	leak := soakPage(t, func(m float64) uint64 { return uint64((50 + m) * (1 << 20)) })
	if !strings.Contains(leak, "The controller's RSS grew") {
		t.Error("leaking soak: no warning on the page")
	}
}
