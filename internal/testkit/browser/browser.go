// Package browser drives Debian's headless Chromium (through chromedp)
// over the pages zkchaos writes, as a person would open them: report.html
// from a run folder, the test-all index, the pages `chaos serve` answers.
// A page is opened, waited for until its load event, and judged on what a
// reader would notice: console errors and warnings, uncaught exceptions,
// links that lead nowhere, a request that would leave the machine. It is
// test support (its Need skips or fails a test), kept out of _test files
// so that every package that opens a page shares one owner: the browser
// tests, and internal/testkit/pageload, which times report pages with the
// Timing that Open reads.
//
// The browser reaches nothing but file:// and loopback: every request the
// page makes is paused by the DevTools Fetch domain and let through only
// to those, and a refusing proxy (a closed loopback port) catches anything
// Chromium would send on its own; Chromium bypasses a proxy for loopback
// by default, so the pages `chaos serve` answers are reached directly.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// Binary is the Chromium that Debian's `chromium` package installs;
// scripts/install-deps.sh installs it when missing.
const Binary = "chromium"

// UnavailableNote is where scripts/install-deps.sh writes, relative to
// the repository, why it could not install Chromium. Need skips a test
// only when the note is there: a machine where the install script ran
// and succeeded must run the browser tests, never skip them quietly.
const UnavailableNote = "bin/chromium-unavailable"

// Viewport is the window the pages are laid out in: a laptop's width, so
// a screenshot shows what a reader of a report sees.
const (
	ViewportWidth  = 1280
	ViewportHeight = 900
)

// EnvBinary names the variable that picks another Chromium than the one
// on PATH: a build of its own, or Chrome, to time a page in the browser
// a reader has (internal/testkit/pageload). A name without a slash is looked up
// on PATH. Unset, Find takes Debian's Binary.
const EnvBinary = "CHROMIUM"

// Find is the path of Chromium: $CHROMIUM when set, else Binary on PATH.
func Find() (string, error) {
	if name := os.Getenv(EnvBinary); name != "" {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("$%s names no browser: %w", EnvBinary, err)
		}
		return p, nil
	}
	p, err := exec.LookPath(Binary)
	if err != nil {
		return "", fmt.Errorf("no %s on PATH: run scripts/install-deps.sh (make test does), or set $%s: %w", Binary, EnvBinary, err)
	}
	return p, nil
}

// Need is Find for a test or a benchmark: it returns Chromium's path,
// skips when the install script wrote why it could not install Chromium
// (and $CHROMIUM names no other), and fails otherwise when Chromium is
// missing (the install script was not run: make test runs it first).
func Need(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err == nil {
		return p
	}
	if root, rerr := chaostest.ModuleRoot(); rerr == nil && os.Getenv(EnvBinary) == "" {
		if why, nerr := os.ReadFile(filepath.Join(root, UnavailableNote)); nerr == nil {
			t.Skipf("no %s: scripts/install-deps.sh could not install it: %s", Binary, strings.TrimSpace(string(why)))
		}
	}
	t.Fatal(err)
	return ""
}

// Browser is one headless Chromium process; its pages are tabs of it.
type Browser struct {
	ctx    context.Context // the browser's chromedp context
	cancel func()
}

// refusingProxy is where Chromium sends whatever is not loopback and not
// stopped by the Fetch domain: port 9 (discard) of loopback, where
// nothing listens, so the connection is refused at once.
const refusingProxy = "127.0.0.1:9"

// Start starts headless Chromium from the binary at path (Find's), with
// --no-sandbox when running as root (Chromium's sandbox refuses root).
// Every user of the browser starts it here, so every page is opened with
// the same window and the same guard against the network.
// The browser lives until Close, or until ctx ends.
func Start(ctx context.Context, path string) (*Browser, error) {
	// Chromium puts its singleton lock folder (org.chromium.Chromium.*)
	// in TMPDIR and leaves it when it is killed, as chromedp ends it: a
	// folder of our own as its TMPDIR, removed by Close, leaves nothing.
	tmp, err := os.MkdirTemp("", "zkchaos-chromium-")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Env("TMPDIR="+tmp),
		chromedp.WindowSize(ViewportWidth, ViewportHeight),
		chromedp.ProxyServer(refusingProxy),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.DisableGPU,
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	b := &Browser{ctx: bctx, cancel: func() { cancelBrowser(); cancelAlloc(); os.RemoveAll(tmp) }}
	// The first action starts the process and opens its first tab.
	if err := chromedp.Do(bctx); err != nil {
		b.cancel()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	return b, nil
}

// Close ends the browser and waits for its processes and profile folder
// to be gone, then removes its TMPDIR.
func (b *Browser) Close() { b.cancel() }

// StartForTest is Need and Start for a test: the browser is closed when
// the test ends.
func StartForTest(t testing.TB) *Browser {
	t.Helper()
	path := Need(t)
	b, err := Start(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}
