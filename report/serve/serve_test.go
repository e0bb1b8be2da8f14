package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/runfixture"
	"github.com/zkchaos/zkchaos/report/serve"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// results writes a results folder: an old fenced run, a newer unfenced
// invalid one, a newest unchecked one, a test-all page, a compare page;
// and, outside it, a secret that a symlink inside points at.
func results(t *testing.T) (base, secret string) {
	base = filepath.Join(t.TempDir(), "results")
	runfixture.Write(t, base, runfixture.Spec{Name: "fenced", Start: t0})
	runfixture.Write(t, base, runfixture.Spec{Name: "unfenced", Start: t0.Add(time.Hour), Fencing: "off", Invalid: true})
	runfixture.Write(t, base, runfixture.Spec{Name: "killed", Start: t0.Add(2 * time.Hour), Recipe: "curator", Unchecked: true})
	matrix := filepath.Join(base, "test-all", "20261130T130000Z")
	if err := os.MkdirAll(matrix, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(base), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	secret = "the secret outside the results folder"
	for path, body := range map[string]string{filepath.Join(matrix, "index.html"): "<!DOCTYPE html>",
		filepath.Join(base, "compare-a-vs-b.html"): "<!DOCTYPE html>", filepath.Join(outside, "secret"): secret} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"out": outside, "outfile": filepath.Join(outside, "secret"), "up": ".."} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return base, secret
}

func start(t *testing.T, base string, loopbackOnly bool) *httptest.Server {
	t.Helper()
	srv, err := serve.Open(base, loopbackOnly, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

var rowRE = regexp.MustCompile(`<tr><td>[^<]*</td><td>([^<]*)</td>`)

// names lists the runs of an index page, in order.
func names(body string) []string {
	var out []string
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestIndexNewestFirstAndFilters(t *testing.T) {
	base, _ := results(t)
	ts := start(t, base, true)
	for _, c := range []struct {
		query string
		want  string
	}{
		{"", "killed unfenced fenced"},
		{"?verdict=invalid", "unfenced"},
		{"?verdict=unchecked", "killed"},
		{"?fencing=on&recipe=seed", "fenced"},
		{"?fencing=on&recipe=curator", "killed"},
		{"?nemesis=pause-holder&verdict=valid", "fenced"},
		{"?name=nobody", ""},
	} {
		code, body := get(t, ts.URL+"/"+c.query)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", c.query, code)
		}
		if got := strings.Join(names(body), " "); got != c.want {
			t.Errorf("index%s lists %q, want %q", c.query, got, c.want)
		}
		if strings.Contains(body, "<script") {
			t.Errorf("index%s has a script", c.query)
		}
	}
	_, body := get(t, ts.URL+"/")
	for _, want := range []string{`href="/test-all/20261130T130000Z/index.html"`, `href="/compare-a-vs-b.html"`, `action="/_compare"`,
		`<option value="invalid">invalid</option>`} {
		if !strings.Contains(body, want) {
			t.Errorf("index lacks %s", want)
		}
	}
	checkLinks(t, ts.URL+"/", body)
}

// checkLinks fetches every link of a page, resolved as a browser would.
func checkLinks(t *testing.T, page, body string) {
	t.Helper()
	base, err := url.Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		ref, err := url.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
		if err != nil {
			t.Fatal(err)
		}
		if code, _ := get(t, base.ResolveReference(ref).String()); code != http.StatusOK {
			t.Errorf("link %s on %s: %d", m[1], page, code)
		}
		n++
	}
	if n == 0 {
		t.Errorf("no links on %s", page)
	}
}

func TestCompare(t *testing.T) {
	base, _ := results(t)
	ts := start(t, base, true)
	_, index := get(t, ts.URL+"/")
	paths := regexp.MustCompile(`<option value="((?:fenced|unfenced)/[^"]+)"`).FindAllStringSubmatch(index, -1)
	if len(paths) != 4 {
		t.Fatalf("compare form offers %d runs, want the 2 checked ones twice: %v", len(paths), paths)
	}
	a, b := paths[0][1], paths[1][1]
	u := ts.URL + "/_compare?" + url.Values{"a": {a}, "b": {b}}.Encode()
	code, page := get(t, u)
	if code != http.StatusOK || !strings.Contains(page, "INVALID") || !strings.Contains(page, ">VALID<") {
		t.Fatalf("compare: %d\n%s", code, page)
	}
	checkLinks(t, u, page)
	for _, c := range []struct {
		query string
		code  int
	}{
		{"a=" + a, http.StatusBadRequest},
		{"a=" + a + "&b=" + a, http.StatusBadRequest},
		{"a=" + a + "&b=../outside", http.StatusNotFound},
		{"a=" + a + "&b=out", http.StatusNotFound},
		{"a=" + a + "&b=" + url.QueryEscape(unchecked(t, index)), http.StatusConflict},
	} {
		if code, body := get(t, ts.URL+"/_compare?"+c.query); code != c.code {
			t.Errorf("compare?%s: %d, want %d: %s", c.query, code, c.code, body)
		}
	}
}

// unchecked finds the unchecked run's folder link on the index.
func unchecked(t *testing.T, index string) string {
	m := regexp.MustCompile(`href="/(killed/[^"]+)/"`).FindStringSubmatch(index)
	if m == nil {
		t.Fatal("no killed run on the index")
	}
	return m[1]
}

// TestFilesStayInside asks for files through symlinks leading out, with
// .. and with .. encoded: refused (403 or 404), the secret never sent;
// files inside, also through the latest links, are served read-only.
func TestFilesStayInside(t *testing.T) {
	base, secret := results(t)
	ts := start(t, base, true)
	for _, p := range []string{"/latest/history.jsonl", "/fenced/latest/report.html", "/unfenced/", "/test-all/20261130T130000Z/"} {
		if code, _ := get(t, ts.URL+p); code != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", p, code)
		}
	}
	for _, p := range []string{"/out/secret", "/out/", "/outfile", "/up/outside/secret", "/up/"} {
		code, body := get(t, ts.URL+p)
		if code != http.StatusForbidden && code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 403 or 404", p, code)
		}
		if strings.Contains(body, secret) {
			t.Errorf("GET %s sent the secret", p)
		}
	}
	for _, p := range []string{"/../outside/secret", "/%2e%2e/outside/secret", "/fenced/..%2f..%2foutside/secret", "/..%5c..%5coutside/secret"} {
		if code, body := raw(t, ts.URL, p); code == http.StatusOK || strings.Contains(body, secret) {
			t.Errorf("GET %s (sent as is): %d, %q", p, code, body)
		}
	}
	if code, _ := get(t, ts.URL+"/favicon.ico"); code != http.StatusNoContent {
		t.Errorf("GET /favicon.ico: %d, want 204 (no icon, no 404 in the console)", code)
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/latest/report.html", strings.NewReader("x"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

// raw sends a GET with the path exactly as given (a client would clean
// it) and follows redirects the same way, returning the last answer.
func raw(t *testing.T, server, path string) (int, string) {
	t.Helper()
	host := strings.TrimPrefix(server, "http://")
	for range 5 {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		conn.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode/100 != 3 || loc == "" {
			return resp.StatusCode, string(b)
		}
		path = loc
	}
	t.Fatalf("redirect loop from %s", path)
	return 0, ""
}

// TestHostCheck refuses a request addressed to another name (DNS
// rebinding) when loopback-only, and serves it when remote is allowed.
func TestHostCheck(t *testing.T) {
	base, _ := results(t)
	for _, c := range []struct {
		loopbackOnly bool
		host         string
		code         int
	}{
		{true, "evil.example:8080", http.StatusForbidden},
		{true, "localhost:8080", http.StatusOK},
		{true, "[::1]:8080", http.StatusOK},
		{true, "127.0.0.2", http.StatusOK},
		{false, "evil.example:8080", http.StatusOK},
	} {
		ts := start(t, base, c.loopbackOnly)
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/", nil)
		req.Host = c.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("loopback-only %v, Host %s: %d, want %d", c.loopbackOnly, c.host, resp.StatusCode, c.code)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	for _, c := range []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:8080", false, true},
		{"127.0.0.5:0", false, true},
		{"[::1]:8080", false, true},
		{"localhost:8080", false, true},
		{"0.0.0.0:8080", false, false},
		{":8080", false, false},
		{"192.0.2.1:8080", false, false},
		{"0.0.0.0:8080", true, true},
		{"127.0.0.1", false, false},
		{"127.0.0.1:", false, false},
	} {
		if err := serve.CheckAddr(c.addr, c.remote); (err == nil) != c.ok {
			t.Errorf("CheckAddr(%q, %v) = %v, want ok %v", c.addr, c.remote, err, c.ok)
		}
	}
}

func TestOpenRefusesBadFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{filepath.Join(dir, "missing"): "no such folder", file: "is not a folder"} {
		if _, err := serve.Open(p, true, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %v, want %q", p, err, want)
		}
	}
}

// TestRun: an address in use is a clear error; cancelling the context
// shuts the server down.
func TestRun(t *testing.T) {
	base, _ := results(t)
	srv, err := serve.Open(base, true, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if err := srv.Run(context.Background(), busy.Addr().String(), nil); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("Run on a busy address: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, "127.0.0.1:0", func(a net.Addr) { addrs <- a }) }()
	a := <-addrs
	if code, _ := get(t, "http://"+a.String()+"/"); code != http.StatusOK {
		t.Fatalf("GET /: %d", code)
	}
	// A socket opened and never used, as a browser preconnects: stopping
	// must still end cleanly (net/http's Shutdown waits 5 s for these).
	pre, err := net.Dial("tcp", a.String())
	if err != nil {
		t.Fatal(err)
	}
	defer pre.Close()
	serve.ShutdownGrace = 200 * time.Millisecond
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if _, err := net.Dial("tcp", a.String()); err == nil {
		t.Fatal("still listening after shutdown")
	}
}
