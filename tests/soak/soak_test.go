package soak

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// scrape reads the metrics once; "" while nothing answers.
func scrape(url string) string {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metricValue is the value of the first line of body starting with name.
func metricValue(body, name string) (float64, bool) {
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// sample is the part of a resources.jsonl line this test asserts.
type sample struct {
	TimeNS int64 `json:"time_ns"`
	Procs  []struct {
		Role      string `json:"role"`
		RSS       uint64 `json:"rss_bytes"`
		OpenFiles int    `json:"open_files"`
		Error     string `json:"error"`
	} `json:"procs"`
	Servers []struct {
		Znodes    *int64 `json:"znode_count"`
		DataBytes int64  `json:"data_bytes"`
	} `json:"servers"`
}

// firstClientOp is the run-clock time of the first operation a worker
// invoked: from then on a worker is alive.
func firstClientOp(t *testing.T, dir string) int64 {
	t.Helper()
	h, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h.Events {
		if e.Process >= 0 && e.Type == history.Invoke {
			return e.Time
		}
	}
	t.Fatal("no client operation in the history")
	return 0
}

func readSamples(t *testing.T, dir string) []sample {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, store.ResourcesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []sample
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("resources.jsonl line %d: %v", len(out)+1, err)
		}
		out = append(out, s)
	}
	return out
}

// TestSoakServesSamplesAndReports: a 20 s fenced soak serves its figures
// in the Prometheus format while it runs (operations rising between two
// scrapes), samples plausible resources every second with increasing
// times, logs its summary lines, is valid, shows its soak section, and
// leaves nothing behind.
func TestSoakServesSamplesAndReports(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", freePort(t))
	cmd, stdout, stderr := chaostest.Start(t, "soak", "--results", results, "--duration", "20s", "--seed", "3",
		"--resources-interval", "1s", "--summary-interval", "5s", "--metrics-addr", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics"),
		"--progress", "off")
	// The controller's RSS comes with the first resources sample, which a
	// loaded machine may take after the first acquisition was counted: it
	// must be served while the run lasts, not at any given scrape.
	var first, later float64
	var rss bool
	var body string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline) && (later <= first || !rss); time.Sleep(500 * time.Millisecond) {
		body = scrape(url)
		if _, ok := metricValue(body, `zkchaos_process_resident_memory_bytes{id="0",role="controller"}`); ok {
			rss = true
		}
		ops, ok := metricValue(body, `zkchaos_ops_total{f="acquire",outcome="ok"}`)
		switch {
		case !ok:
		case first == 0:
			first = ops
		case ops > first && later <= first:
			later = ops
		}
	}
	if first == 0 || later <= first {
		t.Errorf("scrapes during the run: acquire ok %v then %v; want a count that rises", first, later)
	}
	if !rss {
		t.Errorf("no controller RSS served while the soak ran; last scrape:\n%s", body)
	}
	err := cmd.Wait()
	if code := chaostest.ExitOf(err); code != 0 {
		t.Fatalf("chaos soak: exit %d, want 0\nstdout: %s\nstderr: %s", code, stdout, chaostest.Tail(stderr.String(), 3000))
	}
	if body := scrape(url); body != "" {
		t.Error("metrics still served after the soak exited")
	}
	dir := chaostest.LatestRun(results)
	samples := readSamples(t, dir)
	firstOp := firstClientOp(t, dir)
	if len(samples) < 15 {
		t.Errorf("%d resource samples in a 20 s workload at 1 s, want at least 15", len(samples))
	}
	for i, s := range samples {
		if i > 0 && s.TimeNS <= samples[i-1].TimeNS {
			t.Errorf("sample %d at %d ns, not after the one before (%d)", i, s.TimeNS, samples[i-1].TimeNS)
		}
		roles := map[string]int{}
		for _, p := range s.Procs {
			if p.Error != "" {
				continue
			}
			roles[p.Role]++
			if p.RSS < 1<<20 || p.RSS > 4<<30 || p.OpenFiles < 3 {
				t.Errorf("sample %d: %s RSS %d bytes, %d open files: implausible", i, p.Role, p.RSS, p.OpenFiles)
			}
		}
		// A sample before the first client operation may come before
		// any worker has started (a worker takes 0.2-1 s to start).
		if roles["controller"] != 1 || roles["zookeeper"] != 3 || (s.TimeNS > firstOp && roles["worker"] < 1) {
			t.Errorf("sample %d: processes by role %v; want 1 controller, 3 zookeeper, workers", i, roles)
		}
		for _, sv := range s.Servers {
			if sv.DataBytes <= 0 {
				t.Errorf("sample %d: a server's data dirs are %d bytes", i, sv.DataBytes)
			}
		}
	}
	if last := samples[len(samples)-1]; len(last.Servers) != 3 || last.Servers[0].Znodes == nil || *last.Servers[0].Znodes < 5 {
		t.Errorf("last sample's servers: %+v; want 3 with their znode counts", last.Servers)
	}
	log := stderr.String()
	if n := strings.Count(log, `msg="soak summary" why=interval`); n < 3 {
		t.Errorf("%d interval summary lines in 20 s at 5 s, want at least 3", n)
	}
	if !regexp.MustCompile(`msg="soak summary" why=end elapsed=\d+s ops=\d+ .* faults=\d+ violations=0 violations_per_hour=0.0 controller_rss_mib=\d+`).MatchString(log) {
		t.Errorf("no final summary line:\n%s", chaostest.Tail(log, 3000))
	}
	page, err := os.ReadFile(filepath.Join(dir, store.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="soak"`, `href="#soak"`, "Controller RSS at each of", "Znodes, watches and ephemerals per server", "per hour"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	chaostest.AssertNothingLeft(t, dir)
}

// TestUnfencedSoakStopsAtFirst: an unfenced soak stops (by default) at
// its first double write, within 5 s of the write's commit in the apply
// log, logs a summary line for it, and is invalid.
func TestUnfencedSoakStopsAtFirst(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	cmd, stdout, stderr := chaostest.Start(t, "soak", "--results", results, "--duration", "60s", "--seed", "2",
		"--fencing", "off", "--nemesis", "pause-holder", "--nemesis-interval", "2s", "--resources-interval", "1s", "--progress", "off")
	err := cmd.Wait()
	if code := chaostest.ExitOf(err); code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, chaostest.Tail(stderr.String(), 3000))
	}
	dir := chaostest.LatestRun(results)
	st := chaostest.ReadJSON[store.Status](t, dir, store.StatusFile)
	if st.StoppedBecause != store.StoppedAtFirstBecause("double-writer") {
		t.Errorf("stopped because %q", st.StoppedBecause)
	}
	res := chaostest.ReadJSON[struct {
		Checkers map[string]struct {
			FirstSeq int64 `json:"first_violation_seq"`
		} `json:"checkers"`
	}](t, dir, store.ResultsFile)
	commit := commitWall(t, dir, res.Checkers["double-writer"].FirstSeq)
	stop := logTime(t, stderr.String(), `msg="stopping the workload at its first violation`)
	lag := stop.Sub(commit)
	t.Logf("first violation (seq %d) committed at %s, the stop decided %s later; workload ran %s",
		res.Checkers["double-writer"].FirstSeq, commit.Format(time.RFC3339Nano), lag, time.Duration(st.WorkloadNS))
	if lag < 0 || lag > 5*time.Second {
		t.Errorf("the soak stopped %s after its first violation's commit, want within 5 s", lag)
	}
	if !strings.Contains(stderr.String(), `msg="soak summary" why=violation`) {
		t.Error("no summary line at the first violation")
	}
	chaostest.AssertNothingLeft(t, dir)
}

// commitWall is the register's commit time of the apply-log entry seq.
func commitWall(t *testing.T, dir string, seq int64) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, store.ApplyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		var e struct {
			Seq  int64 `json:"seq"`
			Wall int64 `json:"wall"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Seq == seq && seq > 0 {
			return time.Unix(0, e.Wall)
		}
	}
	t.Fatalf("no apply-log entry with seq %d", seq)
	return time.Time{}
}

// logTime is the time of the first slog line of log containing msg.
func logTime(t *testing.T, log, msg string) time.Time {
	t.Helper()
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, msg) {
			continue
		}
		ts, _, _ := strings.Cut(strings.TrimPrefix(l, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		return at
	}
	t.Fatalf("no log line with %s", msg)
	return time.Time{}
}

// TestKilledSoakIsChecked: a soak SIGKILLed mid-run leaves what chaos
// check needs; after chaos cleanup, the check gives a verdict that is not
// valid (the run did not finish), and the report still has the samples
// taken before the kill.
func TestKilledSoakIsChecked(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	cmd, _, stderr := chaostest.Start(t, "soak", "--results", results, "--duration", "5m", "--seed", "4",
		"--resources-interval", "1s", "--progress", "off")
	dir := chaostest.WaitForRun(t, results, stderr, "three resource samples", func(d string) bool {
		b, err := os.ReadFile(filepath.Join(d, store.ResourcesFile))
		return err == nil && strings.Count(string(b), "\n") >= 3
	})
	crashAndCleanUp(t, cmd)
	chaostest.AssertNothingLeft(t, dir)
	code, out := chaostest.Check(t, dir)
	t.Logf("chaos check of the killed soak: exit %d\n%s", code, chaostest.Tail(out, 1500))
	if code != 1 && code != 2 {
		t.Errorf("chaos check: exit %d, want 1 or 2 (a verdict; never valid for a run that did not finish)", code)
	}
	if !strings.Contains(out, "INCOMPLETE") {
		t.Error("the check's summary does not say the run did not finish")
	}
	page, err := os.ReadFile(filepath.Join(dir, store.ReportFile))
	if err != nil || !strings.Contains(string(page), "Controller RSS at each of") {
		t.Errorf("report.html of the killed soak has no resource figure (%v)", err)
	}
}

// crashAndCleanUp SIGKILLs a soak's controller, gives its janitor time to
// sweep, and runs chaos cleanup, as a user would after a crash.
func crashAndCleanUp(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	chaostest.Crash(t, cmd)
	time.Sleep(2 * time.Second) // the janitor's sweep
	if out, err := exec.Command(chaostest.Binary(t), "cleanup").CombinedOutput(); err != nil {
		t.Fatalf("chaos cleanup: %v\n%s", err, out)
	}
}
