package browser

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// One browser for the package's tests: starting Chromium costs a second
// or more, a tab a few milliseconds.
var (
	shared     *Browser
	sharedOnce sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}

func theBrowser(t *testing.T) *Browser {
	t.Helper()
	path := Need(t)
	sharedOnce.Do(func() {
		b, err := Start(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		shared = b
	})
	if shared == nil {
		t.Fatal("the browser did not start (see the first test that asked)")
	}
	return shared
}

// write writes the files of a hand-made site into a new folder and
// returns it.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func open(t *testing.T, path string) *Page {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := theBrowser(t).OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// TestCleanPage: a page like a report (no script, relative links to files
// and a folder, in-page anchors, an inline SVG) loads with no problem,
// every link resolves, and what a test reads of it is what is there.
func TestCleanPage(t *testing.T) {
	dir := write(t, map[string]string{
		"index.html": `<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body>
<div id="verdict">INVALID</div>
<section id="figures"><figure><svg width="200" height="100"><rect width="200" height="100"/></svg></figure>
<figure><svg width="10" height="10"><a href="#verdict"><circle r="5" cx="5" cy="5"/></a></svg></figure></section>
<a href="#figures">figures</a> <a href="data.json">data</a> <a href="logs/">logs</a> <a href="other.html#there">other</a>
</body></html>`,
		"data.json":  `{}`,
		"logs/a.log": "x",
		"other.html": `<!DOCTYPE html><html><head><meta charset="utf-8"><title>o</title></head><body><p id="there">here</p></body></html>`,
	})
	p := open(t, filepath.Join(dir, "index.html"))
	if p.DOMContentLoaded <= 0 || p.Load < p.DOMContentLoaded || p.Drawn < p.Load || p.Load > 10*time.Second {
		t.Errorf("timing %+v: want 0 < DOMContentLoaded <= load <= drawn, load under 10 s", p.Timing)
	}
	if n, err := p.Count(ctx(t), "*"); err != nil || n != p.Elements || n != 18 {
		t.Errorf("timing counted %d elements, the page holds %d (%v), want 18", p.Elements, n, err)
	}
	if probs, err := p.Problems(ctx(t)); err != nil || len(probs) > 0 {
		t.Errorf("problems of a clean page: %q, %v", probs, err)
	}
	if bad, err := p.CheckLinks(ctx(t)); err != nil || len(bad) > 0 {
		t.Errorf("broken links of a clean page: %q, %v", bad, err)
	}
	links, err := p.Links(ctx(t))
	if err != nil || len(links) != 5 {
		t.Errorf("links %+v, %v: want 5 (an SVG one among them)", links, err)
	}
	if txt, ok, err := p.Text(ctx(t), "#verdict"); err != nil || !ok || txt != "INVALID" {
		t.Errorf("verdict text %q %v %v", txt, ok, err)
	}
	if _, ok, err := p.Text(ctx(t), "#nothing"); err != nil || ok {
		t.Errorf("a missing element was found (%v)", err)
	}
	if n, err := p.Count(ctx(t), "#figures svg"); err != nil || n != 2 {
		t.Errorf("svg count %d %v", n, err)
	}
	boxes, err := p.Boxes(ctx(t), "#figures svg")
	if err != nil || len(boxes) != 2 || boxes[0].Width != 200 || boxes[0].Height != 100 {
		t.Errorf("boxes %+v %v", boxes, err)
	}
	if in, err := p.Within(ctx(t), "verdict", "figures"); err != nil || in {
		t.Errorf("verdict within figures: %v %v", in, err)
	}
	shot := filepath.Join(t.TempDir(), "shots", "page.png")
	if err := p.Screenshot(ctx(t), shot); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if w := img.Bounds().Dx(); w != ViewportWidth {
		t.Errorf("screenshot %d px wide, want the viewport's %d", w, ViewportWidth)
	}
}

// TestProblemsFound: a console error and warning, an uncaught exception
// and a request off the machine are each reported, and the request is
// refused, never sent (.invalid names nothing anywhere, and the guard
// fails it before a connection is tried).
func TestProblemsFound(t *testing.T) {
	dir := write(t, map[string]string{"index.html": `<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body>
<img src="https://zkchaos.invalid/x.png">
<script>console.error("boom"); console.warn("careful"); console.log("fine"); throw new Error("uncaught one");</script>
</body></html>`})
	p := open(t, filepath.Join(dir, "index.html"))
	probs, err := p.Problems(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(probs, "\n")
	t.Logf("problems:\n%s", all)
	for _, want := range []string{"console error: boom", "console warning: careful", "uncaught one",
		"request outside file:// and loopback refused: https://zkchaos.invalid/x.png"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "fine") {
		t.Errorf("a console.log counted as a problem:\n%s", all)
	}
}

// TestBrokenLinks: each way a link can lead nowhere is found, and only
// those: a missing file, a missing id here or on another page, a link off
// the machine, a loopback page that does not answer 200.
func TestBrokenLinks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`<!DOCTYPE html><html><body><p id="here">ok</p></body></html>`))
	}))
	defer srv.Close()
	dir := write(t, map[string]string{
		"index.html": `<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body><p id="top">top</p>
<a href="#top">good anchor</a> <a href="#gone">bad anchor</a>
<a href="present.txt">good file</a> <a href="absent.txt">bad file</a>
<a href="other.html#there">good other</a> <a href="other.html#elsewhere">bad other</a>
<a href="https://example.invalid/">external</a> <a href="mailto:a@example.invalid">mail</a>
<a href="` + srv.URL + `/ok#here">good served</a> <a href="` + srv.URL + `/missing">bad served</a>
<a href="` + srv.URL + `/ok#nowhere">bad served anchor</a>
</body></html>`,
		"present.txt": "x",
		"other.html":  `<!DOCTYPE html><html><body><p id="there">there</p></body></html>`,
	})
	p := open(t, filepath.Join(dir, "index.html"))
	bad, err := p.CheckLinks(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bad {
		got = append(got, strings.SplitN(b, `"`, 3)[1])
	}
	want := []string{"bad anchor", "bad file", "bad other", "external", "mail", "bad served", "bad served anchor"}
	if !slices.Equal(got, want) {
		t.Errorf("broken links %q, want %q; in full:\n%s", got, want, strings.Join(bad, "\n"))
	}
}

// TestRefusingProxy: a request off the machine that the Fetch guard did
// not see (a tab without it, as Chromium's own traffic is) goes to the
// refusing proxy and fails there, never reaching a resolver or the
// network.
func TestRefusingProxy(t *testing.T) {
	tab, cancel := chromedp.NewContext(theBrowser(t).ctx)
	defer cancel()
	err := chromedp.Do(tab, chromedp.Navigate("http://zkchaos.invalid/"))
	if err == nil || !strings.Contains(err.Error(), "ERR_PROXY_CONNECTION_FAILED") {
		t.Errorf("an unguarded request off the machine: %v, want the proxy's refusal", err)
	}
}

// TestLocal: what stays on the machine.
func TestLocal(t *testing.T) {
	for addr, want := range map[string]bool{
		"file:///tmp/x.html": true, "data:text/html,x": true, "about:blank": true,
		"http://127.0.0.1:8080/": true, "http://127.3.4.5/": true, "http://[::1]:9/": true, "http://localhost/": true,
		"https://example.com/": false, "http://10.0.0.1/": false, "http://198.18.0.1/": false,
		"ftp://127.0.0.1/": false, "mailto:x@y": false, "javascript:alert(1)": false,
	} {
		if got := Local(addr); got != want {
			t.Errorf("Local(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestFind: $CHROMIUM, when set, is the browser, looked up on PATH when
// it is a bare name, and an error when it names nothing.
func TestFind(t *testing.T) {
	path := Need(t)
	t.Setenv(EnvBinary, filepath.Base(path))
	if p, err := Find(); err != nil || p != path {
		t.Errorf("$%s=%s: found %q, %v; want %s", EnvBinary, filepath.Base(path), p, err, path)
	}
	t.Setenv(EnvBinary, filepath.Join(t.TempDir(), "no-such-browser"))
	if p, err := Find(); err == nil || !strings.Contains(err.Error(), "$"+EnvBinary) {
		t.Errorf("$%s naming nothing: found %q, %v; want an error naming $%s", EnvBinary, p, err, EnvBinary)
	}
}

// TestCloseLeavesNothing: Chromium, killed by chromedp, leaves its
// singleton lock folder (org.chromium.Chromium.*) in its TMPDIR; Start
// gives it a folder of its own that Close removes, so a test run leaves
// nothing in the machine's temporary folder. The test gives the browser
// a temporary folder of its own, so a browser another test package starts
// meanwhile is not counted as this one's leftover. The folder's path is
// short: Chromium refuses a singleton socket path over about 100 bytes,
// which t.TempDir's would pass.
func TestCloseLeavesNothing(t *testing.T) {
	tmp, err := os.MkdirTemp("", "zcb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	leftovers := func() []string {
		m, err := filepath.Glob(filepath.Join(os.TempDir(), "org.chromium.Chromium.*"))
		if err != nil {
			t.Fatal(err)
		}
		own, err := filepath.Glob(filepath.Join(os.TempDir(), "zkchaos-chromium-*"))
		if err != nil {
			t.Fatal(err)
		}
		return append(m, own...)
	}
	before := leftovers()
	b, err := Start(context.Background(), Need(t))
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	for _, p := range leftovers() {
		if !slices.Contains(before, p) {
			t.Errorf("the browser left %s behind", p)
		}
	}
}
