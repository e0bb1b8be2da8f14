package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Page is one page opened in its own tab, after its load event, with what
// the browser reported while loading it and since.
type Page struct {
	// URL is the address the page was opened at.
	URL string
	// Timing is how its load went, read when Open returned: Load (to
	// the end of the load event), Drawn, DOMContentLoaded, Elements.
	Timing

	b      *Browser
	tab    context.Context
	cancel func()

	mu       sync.Mutex
	problems []string      // console errors and warnings, exceptions, blocked requests
	marks    chan string   // sync marks seen by the console reader
	syncN    int           // the last sync mark written
	done     chan struct{} // closed when the console reader ends
}

// Open opens url in a new tab of b and waits for its load event and two
// frames drawn after it (Timing); ctx bounds the whole load. Every request the page makes outside file://
// and loopback is refused and counted as a problem.
func (b *Browser) Open(ctx context.Context, rawURL string) (*Page, error) {
	tab, cancel := chromedp.NewContext(b.ctx)
	p := &Page{URL: rawURL, b: b, tab: tab, cancel: cancel, marks: make(chan string, 16), done: make(chan struct{})}
	if err := p.start(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("open %s: %w", rawURL, err)
	}
	return p, nil
}

// OpenFile opens the file at path (made absolute) as a file:// page.
func (b *Browser) OpenFile(ctx context.Context, path string) (*Page, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return b.Open(ctx, FileURL(abs))
}

// FileURL is the file:// address of the absolute path abs.
func FileURL(abs string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// start attaches the tab, arms the request guard and the console reader,
// navigates and reads the timing. The tab is attached with its own
// context (chromedp ties a tab's life to the context of its first
// action), and closed if ctx ends first.
func (p *Page) start(ctx context.Context) error {
	stop := context.AfterFunc(ctx, p.cancel)
	defer stop()
	if err := chromedp.Do(p.tab); err != nil { // attaches the tab
		return err
	}
	msgs := chromedp.Console(p.tab)
	paused := chromedp.Events(p.tab, fetch.RequestPaused)
	go p.readConsole(msgs)
	go p.guard(paused)
	all := fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}
	if _, err := chromedp.Call(p.tab, fetch.Enable, all); err != nil {
		return fmt.Errorf("intercept requests: %w", err)
	}
	if err := chromedp.Do(p.tab, chromedp.Navigate(p.URL)); err != nil {
		return err
	}
	t, err := readTiming(p.tab)
	p.Timing = t
	return err
}

// bound is the tab's context ended also by ctx, for one call made on the
// caller's behalf.
func (p *Page) bound(ctx context.Context) (context.Context, func()) {
	run, cancel := context.WithCancel(p.tab)
	stop := context.AfterFunc(ctx, cancel)
	return run, func() { stop(); cancel() }
}

// Close closes the tab.
func (p *Page) Close() {
	p.cancel()
	<-p.done
}

// readConsole keeps the console's errors, warnings and exceptions, and
// passes on the sync marks Problems writes.
func (p *Page) readConsole(msgs iter.Seq2[chromedp.ConsoleMessage, error]) {
	defer close(p.done)
	for m, err := range msgs {
		if err != nil {
			return
		}
		if mark, ok := strings.CutPrefix(m.Text, syncPrefix); ok && m.Type == chromedp.ConsoleDebug {
			select {
			case p.marks <- mark:
			case <-p.tab.Done():
				return
			}
			continue
		}
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException, "assert":
			where := m.URL
			if where != "" {
				where = fmt.Sprintf(" (%s:%d)", where, m.Line+1)
			}
			p.addProblem(fmt.Sprintf("console %s: %s%s", m.Type, m.Text, where))
		}
	}
}

func (p *Page) addProblem(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.problems = append(p.problems, s)
}

// guard lets through the requests to file:// and loopback and fails the
// others, each counted as a problem.
func (p *Page) guard(paused iter.Seq2[fetch.EventRequestPaused, error]) {
	for ev, err := range paused {
		if err != nil {
			return
		}
		if Local(ev.Request.URL) {
			_, err = chromedp.Call(p.tab, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		} else {
			p.addProblem("request outside file:// and loopback refused: " + ev.Request.URL)
			_, err = chromedp.Call(p.tab, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID,
				ErrorReason: network.ErrorReasonBlockedByClient})
		}
		if err != nil && p.tab.Err() == nil {
			p.addProblem(fmt.Sprintf("request guard: %v", err))
		}
	}
}

// Local reports whether a request to rawURL stays on this machine: a
// file:// address, or http(s) to a loopback address (127.0.0.0/8, ::1,
// localhost). data: and about: carry their content in the address.
func Local(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "file", "data", "about":
		return true
	case "http", "https", "ws", "wss":
		return loopbackHost(u.Hostname())
	}
	return false
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

const syncPrefix = "zkchaos-sync-"

// Problems is everything the browser reported against the page so far:
// console errors and warnings (the page's own and the browser's, such as
// a resource that failed to load), uncaught exceptions, and requests
// refused for leaving the machine. A page a reader can trust has none.
// It first writes a mark to the console and waits for the reader to see
// it, so every message sent before the call is counted.
func (p *Page) Problems(ctx context.Context) ([]string, error) {
	p.mu.Lock()
	p.syncN++
	mark := fmt.Sprint(p.syncN)
	p.mu.Unlock()
	js := fmt.Sprintf("console.debug(%q)", syncPrefix+mark)
	if _, err := p.Eval(ctx, js, new(any)); err != nil {
		return nil, err
	}
	for {
		select {
		case m := <-p.marks:
			if m != mark {
				continue
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			return append([]string(nil), p.problems...), nil
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the console of %s: %w", p.URL, ctx.Err())
		case <-p.done:
			return nil, fmt.Errorf("the console of %s closed", p.URL)
		}
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its
// JSON value into out (a pointer); it returns out for chaining. The
// pages zkchaos writes have no script of their own: this is the test
// looking at the DOM, as DevTools' console would.
func (p *Page) Eval(ctx context.Context, js string, out any) (any, error) {
	run, stop := p.bound(ctx)
	defer stop()
	raw, err := chromedp.Run(run, chromedp.Evaluate[[]byte](js))
	if err != nil {
		return nil, fmt.Errorf("evaluate in %s: %w", p.URL, err)
	}
	if len(raw) == 0 { // undefined
		return out, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("evaluate in %s: decode %s: %w", p.URL, raw, err)
	}
	return out, nil
}

// Count is how many elements match the CSS selector sel.
func (p *Page) Count(ctx context.Context, sel string) (int, error) {
	var n int
	_, err := p.Eval(ctx, fmt.Sprintf("document.querySelectorAll(%s).length", jsString(sel)), &n)
	return n, err
}

// Text is the rendered text of the first element matching sel (what a
// reader sees: innerText), and whether there is one.
func (p *Page) Text(ctx context.Context, sel string) (string, bool, error) {
	var v *string
	_, err := p.Eval(ctx, fmt.Sprintf("(() => { const e = document.querySelector(%s); return e ? e.innerText : null; })()", jsString(sel)), &v)
	if err != nil || v == nil {
		return "", false, err
	}
	return *v, true, nil
}

// Box is an element's rendered size in CSS pixels.
type Box struct {
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// Boxes are the rendered sizes of every element matching sel, in
// document order: an element that is in the page but drawn with no area
// (display:none, an empty SVG) has a zero box.
func (p *Page) Boxes(ctx context.Context, sel string) ([]Box, error) {
	var bs []Box
	_, err := p.Eval(ctx, fmt.Sprintf(`Array.from(document.querySelectorAll(%s), e => { const r = e.getBoundingClientRect(); return {width: r.width, height: r.height}; })`, jsString(sel)), &bs)
	return bs, err
}

// IDs is the set of element ids in the page.
func (p *Page) IDs(ctx context.Context) (map[string]bool, error) {
	var ids []string
	if _, err := p.Eval(ctx, `Array.from(document.querySelectorAll('[id]'), e => e.id)`, &ids); err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set, nil
}

// Within reports whether the element with id inner is inside the element
// with id outer (both present).
func (p *Page) Within(ctx context.Context, inner, outer string) (bool, error) {
	var in bool
	js := fmt.Sprintf(`(() => { const i = document.getElementById(%s), o = document.getElementById(%s); return !!(i && o && o.contains(i)); })()`, jsString(inner), jsString(outer))
	_, err := p.Eval(ctx, js, &in)
	return in, err
}

// Screenshot writes a PNG of the whole page (not only the viewport) to
// path, making its folder.
func (p *Page) Screenshot(ctx context.Context, path string) error {
	run, stop := p.bound(ctx)
	defer stop()
	png, err := chromedp.Run(run, chromedp.FullScreenshot(100))
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", p.URL, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("screenshot %s: %w", p.URL, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("screenshot %s: %w", p.URL, err)
	}
	return nil
}

// jsString is s as a JavaScript string literal (JSON's is one).
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
