package browser

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	web "github.com/zkchaos/zkchaos/internal/testkit/browser"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// servingRE is the line `chaos serve` prints once it listens, with the
// address it chose for port 0.
var servingRE = regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/)`)

// startServe starts `chaos serve` on the results folder at any free
// loopback port and returns its address; the server is killed when the
// test ends, if it still runs (stopServe ends it as a user does).
func startServe(t *testing.T, results string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(chaostest.Binary(t), "serve", "--results", results, "--addr", "127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	noErr(t, err)
	noErr(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := servingRE.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("chaos serve said %q (%v)\n%s", line, err, stderr.String())
	}
	return cmd, m[1]
}

// stopServe sends SIGINT: chaos serve shuts down and exits 0.
func stopServe(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	noErr(t, cmd.Process.Signal(syscall.SIGINT))
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

// status is the HTTP status of a GET of raw, sent as written (Go's
// client, not the browser, which would clean the path first).
func status(t *testing.T, raw string) int {
	t.Helper()
	resp, err := http.Get(raw)
	noErr(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// runRow is one row of the served index's table of runs.
type runRow struct{ Name, Verdict string }

// rowsOf reads the table of runs of a served index.
func rowsOf(t *testing.T, p *web.Page) []runRow {
	t.Helper()
	var cells [][]string
	_, err := p.Eval(testCtx(t), `Array.from(document.querySelectorAll('#runs tr'), r => Array.from(r.cells, c => c.innerText.trim())).slice(1)`, &cells)
	noErr(t, err)
	var rows []runRow
	for _, c := range cells {
		if len(c) < 7 {
			t.Fatalf("served index: a row of runs with %d cells: %q", len(c), c)
		}
		rows = append(rows, runRow{Name: c[1], Verdict: c[6]})
	}
	return rows
}

// servedPath is the address path the server gives the file at path
// inside results.
func servedPath(t *testing.T, results, path string) string {
	t.Helper()
	rel, err := filepath.Rel(results, path)
	noErr(t, err)
	return "/" + filepath.ToSlash(rel)
}

// servesLink reports whether one of links leads to the served document
// with the address path want.
func servesLink(links []web.Link, want string) bool {
	return slices.ContainsFunc(links, func(l web.Link) bool {
		u, err := url.Parse(l.URL)
		return err == nil && u.Path == want
	})
}

// checkServe runs `chaos serve` on the test-all's results folder and
// reads it in the browser over loopback HTTP: the index lists both runs
// and links their reports, the test-all index and the compare page; the
// verdict filter keeps the right run; the index's compare form gives the
// compare page of both runs; a report served opens clean. An encoded
// ".." is refused, and SIGINT ends the server with exit 0.
func checkServe(t *testing.T, b *web.Browser, ta testAll, runs [2]run, comparePage string) {
	cmd, base := startServe(t, ta.Results)
	if got := status(t, base+"%2e%2e/%2e%2e/etc/passwd"); got != http.StatusNotFound {
		t.Errorf("GET of an encoded ../../etc/passwd: %d, want %d", got, http.StatusNotFound)
	}
	ctx := testCtx(t)
	index := openChecked(t, b, base, "served index", "serve")
	var names []string
	for _, r := range runs {
		names = append(names, chaostest.ReadTest(t, r.Dir).Name)
	}
	if rows := rowsOf(t, index); len(rows) != 2 || !slices.ContainsFunc(rows, func(r runRow) bool { return r.Name == names[0] }) ||
		!slices.ContainsFunc(rows, func(r runRow) bool { return r.Name == names[1] }) {
		t.Errorf("served index lists %+v, want the runs %q", rows, names)
	}
	links, err := index.Links(ctx)
	noErr(t, err)
	for _, path := range []string{runs[0].report(), runs[1].report(), ta.Index, comparePage} {
		if !servesLink(links, servedPath(t, ta.Results, path)) {
			t.Errorf("served index has no link to %s", servedPath(t, ta.Results, path))
		}
	}
	for i, v := range []string{"valid", "invalid"} {
		p := openChecked(t, b, base+"?verdict="+v, "served index, verdict "+v, "")
		// The verdict's first word; the rest may say how the run ended
		// ("invalid (stopped at its first violation)").
		if rows := rowsOf(t, p); len(rows) != 1 || rows[0].Name != names[i] || firstWord(rows[0].Verdict) != v {
			t.Errorf("served index filtered by verdict %s lists %+v, want only %s", v, rows, names[i])
		}
	}
	checkServedCompare(t, b, index, runs)
	report := base + servedPath(t, ta.Results, runs[1].report())[1:]
	p := openChecked(t, b, report, "served report", "")
	expectNone(t, "served report's verdict", checkVerdict(t, ctx, p, runs[1].Res.Valid))
	stopServe(t, cmd)
}

// checkServedCompare submits the served index's compare form as it
// stands (the address a browser's GET form goes to) and checks the page it gives: both
// verdicts, both timelines.
func checkServedCompare(t *testing.T, b *web.Browser, index *web.Page, runs [2]run) {
	t.Helper()
	ctx := testCtx(t)
	var addr string
	_, err := index.Eval(ctx, `(() => { const f = document.getElementById('compare'); return f ? f.action + '?' + new URLSearchParams(new FormData(f)) : ''; })()`, &addr)
	noErr(t, err)
	if addr == "" {
		t.Error("served index has no compare form")
		return
	}
	p := openChecked(t, b, addr, "served compare", "")
	// The form offers the runs newest first: the unfenced run, which ran
	// second, is A.
	expectNone(t, "served compare's verdicts", checkTexts(t, ctx, p, compareVerdicts,
		verdictText(runs[1].Res.Valid), verdictText(runs[0].Res.Valid)))
	expectNone(t, "served compare's timelines", checkDrawnCount(t, ctx, p, timelineSel, "lock ownership timelines", 2))
}
