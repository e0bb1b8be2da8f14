package pages

import (
	"bufio"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/chaostest"
)

// verdicts are the words the pages use for chaos run's exit codes.
var verdicts = map[int]string{0: "VALID", 1: "INVALID", 2: "UNKNOWN"}

// TestCompareAndServeRealRuns: the pages show what two real runs'
// results say, their links resolve from disk and over HTTP, and the
// server refuses to leave the results folder.
func TestCompareAndServeRealRuns(t *testing.T) {
	chaostest.NeedEnsemble(t)
	results := filepath.Join(t.TempDir(), "results")
	var dirs [2]string
	var words [2]string
	for i, fencing := range []string{"on", "off"} {
		r := chaostest.Run(t, results, "--name", "fencing-"+fencing, "--fencing", fencing, "--nemesis", "pause-holder",
			"--time-limit", "20s", "--seed", "1")
		if r.Code > 2 || r.Dir == "" {
			t.Fatalf("run fencing %s: exit %d\n%s", fencing, r.Code, chaostest.Tail(r.Stderr, 2000))
		}
		dirs[i], words[i] = r.Dir, verdicts[r.Code]
	}
	page := comparePage(t, dirs, words)
	serveResults(t, results, page, words)
}

// comparePage runs chaos compare and checks the page it writes.
func comparePage(t *testing.T, dirs [2]string, words [2]string) string {
	out, err := exec.Command(chaostest.Binary(t), "compare", dirs[0], dirs[1]).CombinedOutput()
	if err != nil {
		t.Fatalf("chaos compare: %v\n%s", err, out)
	}
	page, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "compare: ")
	if !ok || filepath.Dir(page) != filepath.Dir(filepath.Dir(dirs[0])) {
		t.Fatalf("chaos compare said %q; want the page in the results folder", out)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	for i, w := range words {
		if !strings.Contains(body, `">`+w+`</span>`) {
			t.Errorf("compare page does not show run %d's verdict %s", i, w)
		}
	}
	if !strings.Contains(body, `<tr class="differ"><th>fencing</th><td><code>on</code></td><td><code>off</code></td></tr>`) {
		t.Error("compare page does not highlight the fencing difference")
	}
	if strings.Contains(body, "<script") || strings.Count(body, "<svg") < 2 {
		t.Error("compare page has a script or lacks the runs' figures")
	}
	for _, h := range hrefs(body) {
		if _, err := os.Stat(filepath.Join(filepath.Dir(page), filepath.FromSlash(h))); err != nil {
			t.Errorf("compare page link %s does not resolve on disk: %v", h, err)
		}
	}
	return filepath.Base(page)
}

var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

func hrefs(body string) []string {
	var out []string
	for _, m := range hrefRE.FindAllStringSubmatch(body, -1) {
		out = append(out, strings.ReplaceAll(m[1], "&amp;", "&"))
	}
	return out
}

// serveResults runs chaos serve on a free loopback port and walks it.
func serveResults(t *testing.T, results, comparePage string, words [2]string) {
	cmd := exec.Command(chaostest.Binary(t), "serve", "--results", results, "--addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("chaos serve said %q (%v)", line, err)
	}
	base := m[1]
	index := fetch(t, base, http.StatusOK)
	for _, want := range []string{"fencing-on", "fencing-off", comparePage} {
		if !strings.Contains(index, want) {
			t.Errorf("index lacks %s", want)
		}
	}
	followLinks(t, base, index)
	followLinks(t, base+comparePage, fetch(t, base+comparePage, http.StatusOK))
	opts := regexp.MustCompile(`<option value="(fencing-[^"/]+/[^"]+)"`).FindAllStringSubmatch(index, -1)
	if len(opts) != 4 {
		t.Fatalf("compare form offers %d options, want 4", len(opts))
	}
	live := base + "_compare?" + url.Values{"a": {opts[0][1]}, "b": {opts[1][1]}}.Encode()
	body := fetch(t, live, http.StatusOK)
	for _, w := range words {
		if !strings.Contains(body, `">`+w+`</span>`) {
			t.Errorf("served compare page lacks verdict %s", w)
		}
	}
	followLinks(t, live, body)
	fetch(t, base+"%2e%2e/%2e%2e/etc/passwd", http.StatusNotFound)
	stop(t, cmd)
}

func fetch(t *testing.T, u string, want int) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Errorf("GET %s: %d, want %d", u, resp.StatusCode, want)
	}
	return string(b)
}

func followLinks(t *testing.T, page, body string) {
	t.Helper()
	pu, err := url.Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hrefs(body) {
		ref, err := url.Parse(h)
		if err != nil {
			t.Fatal(err)
		}
		fetch(t, pu.ResolveReference(ref).String(), http.StatusOK)
	}
}

// stop sends SIGINT: chaos serve shuts down and exits 0.
func stop(t *testing.T, cmd *exec.Cmd) {
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("chaos serve after SIGINT: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("chaos serve still running 10 s after SIGINT")
	}
}
