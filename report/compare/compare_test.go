package compare_test

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/runfixture"
	"github.com/zkchaos/zkchaos/report/compare"
	"github.com/zkchaos/zkchaos/report/runview"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// pair writes a fenced valid run and an unfenced invalid one.
func pair(t *testing.T) (base, fenced, unfenced string) {
	base = t.TempDir()
	fenced = runfixture.Write(t, base, runfixture.Spec{Name: "fenced", Start: t0})
	unfenced = runfixture.Write(t, base, runfixture.Spec{Name: "unfenced", Start: t0.Add(time.Minute), Fencing: "off", Invalid: true})
	return base, fenced, unfenced
}

func load(t *testing.T, dir string) *runview.Run {
	t.Helper()
	r, err := runview.Load(os.DirFS(dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWrite writes the page where chaos compare puts it by default and
// into a folder elsewhere: its content, and every link resolving to a
// file or folder from the page's own folder.
func TestWrite(t *testing.T) {
	base, a, b := pair(t)
	def, err := compare.DefaultPath(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(base, "compare-fenced-"+filepath.Base(a)+"-vs-unfenced-"+filepath.Base(b)+".html")
	if def != want {
		t.Fatalf("DefaultPath = %s, want %s", def, want)
	}
	for _, out := range []string{def, filepath.Join(t.TempDir(), "elsewhere", "c.html")} {
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := compare.Write(out, load(t, a), load(t, b), a, b); err != nil {
			t.Fatal(err)
		}
		page, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		checkPage(t, string(page))
		checkLinks(t, out, string(page), 4)
	}
}

func checkPage(t *testing.T, page string) {
	t.Helper()
	for _, want := range []string{
		`<span class="verdict valid">VALID</span>`, `<span class="verdict invalid">INVALID</span>`,
		`<tr class="differ"><th>fencing</th><td><code>on</code></td><td><code>off</code></td></tr>`,
		`<tr><th>workload</th><td><code>lock</code></td><td><code>lock</code></td></tr>`,
		`<tr class="differ"><th>double-writer: lost-update</th><td class="n">0</td><td class="n">2</td></tr>`,
		`<th>time to first violation</th><td class="n">none</td><td class="n">1.500 s (double-writer)</td>`,
		`<th>lock wait p50 / p99 (ms)</th><td class="n">10.0 / 1500.0</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// The timelines: each run's ownership timeline, latency and
	// throughput, drawn (the fixture's results are not the checkers' own,
	// so its marks are not placed: timeline's TestTwoTimelinesShareAPage
	// covers their ids and links).
	if n := strings.Count(page, "<svg"); n != 6 {
		t.Errorf("%d figures, want 6 (timeline, latency and throughput of each run)", n)
	}
	if n := strings.Count(page, `aria-label="lock ownership timeline`); n != 2 {
		t.Errorf("%d ownership timelines, want one per run", n)
	}
	for _, bad := range []string{"<script", "http://", "https://", "<link", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("page is not self-contained: it has %q", bad)
		}
	}
}

var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

// checkLinks resolves every link of the page as a browser opening it
// from disk would, and counts them.
func checkLinks(t *testing.T, page, body string, want int) {
	t.Helper()
	links := hrefRE.FindAllStringSubmatch(body, -1)
	if len(links) != want {
		t.Errorf("%d links, want %d", len(links), want)
	}
	for _, m := range links {
		href, _, _ := strings.Cut(html.UnescapeString(m[1]), "#")
		target := filepath.Join(filepath.Dir(page), filepath.FromSlash(href))
		if _, err := os.Stat(target); err != nil {
			t.Errorf("link %s from %s does not resolve: %v", m[1], page, err)
		}
	}
}
