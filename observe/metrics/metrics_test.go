package metrics

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/observe/resources"
)

func TestCheckAddr(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:9100": true, "127.0.0.1:0": true, "[::1]:9100": true, "127.1.2.3:80": true,
		"0.0.0.0:9100": false, ":9100": false, "localhost:9100": false, "10.0.0.1:9100": false,
		"127.0.0.1": false, "127.0.0.1:http": false, "127.0.0.1:70000": false,
	} {
		if err := CheckAddr(addr); (err == nil) != ok {
			t.Errorf("CheckAddr(%q) = %v, want ok %v", addr, err, ok)
		}
	}
}

// TestScrape serves real figures over loopback and reads them back as a
// scraper would.
func TestScrape(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := int64(42)
	src := Sources{
		Status: func() (progress.Status, bool) {
			return progress.Status{Phase: "workload", Elapsed: 90 * time.Second, Limit: time.Hour, Faults: 3,
				Ops:    []progress.OpCount{{F: "acquire", OK: 10, Fail: 2, Info: 1}},
				Online: []progress.Count{{Name: "double-writer", Violations: 5}}}, true
		},
		Resources: func() (resources.Sample, bool) {
			return resources.Sample{TimeNS: int64(80 * time.Second), Procs: []resources.Proc{
				{Role: resources.RoleController, RSS: 1000, CPU: 1.5, OpenFiles: 9},
				{Role: resources.RoleZooKeeper, ID: 2, RSS: 2000},
				{Role: resources.RoleWorker, ID: 5, RSS: 10, OpenFiles: 4}, {Role: resources.RoleWorker, ID: 6, RSS: 20, OpenFiles: 4}},
				Servers: []resources.Server{{ID: 1, Znodes: &n, DataBytes: 777}, {ID: 2, CountsError: "paused", DataBytes: -1}}}, true
		},
	}
	s := Serve(ln, src)
	defer s.Close()
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []string{
		`zkchaos_ops_total{f="acquire",outcome="ok"} 10`, `zkchaos_ops_total{f="acquire",outcome="info"} 1`,
		`zkchaos_faults_total 3`, `zkchaos_violations_total{checker="double-writer"} 5`,
		`zkchaos_workload_elapsed_seconds 90`, `zkchaos_process_resident_memory_bytes{id="0",role="controller"} 1000`,
		`zkchaos_process_resident_memory_bytes{id="2",role="zookeeper"} 2000`,
		`zkchaos_process_resident_memory_bytes{id="all",role="worker"} 30`, `zkchaos_process_open_fds{id="all",role="worker"} 8`,
		`zkchaos_workers 2`, `zkchaos_server_znodes{server="1"} 42`, `zkchaos_server_data_bytes{server="1"} 777`,
		"# TYPE zkchaos_ops_total counter",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no %q in:\n%s", want, body)
		}
	}
	for _, absent := range []string{`zkchaos_server_znodes{server="2"}`, `zkchaos_server_data_bytes{server="2"}`} {
		if strings.Contains(body, absent) {
			t.Errorf("%s served for a server that did not answer", absent)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := http.Get("http://" + s.Addr() + "/metrics"); err == nil {
		t.Error("still served after Close")
	}
}

// TestHeapProfileServed: the live controller's heap profile is served
// beside the figures, in pprof's format (gzip), for a soak that grows.
func TestHeapProfileServed(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, Sources{})
	defer s.Close()
	resp, err := http.Get("http://" + s.Addr() + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("GET /debug/pprof/heap: %s, %d bytes, not a gzipped profile", resp.Status, len(b))
	}
}
