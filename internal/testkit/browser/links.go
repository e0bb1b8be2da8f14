package browser

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"
)

// Link is one link of a page: its href as written, the address the
// browser resolved it to, and its text.
type Link struct {
	Href string `json:"href"`
	URL  string `json:"url"`
	Text string `json:"text"`
}

// Links lists every <a> with an href in the page, HTML's and SVG's (a
// figure's or the timeline's marks may be SVG links), in document order.
func (p *Page) Links(ctx context.Context) ([]Link, error) {
	const js = `Array.from(document.querySelectorAll('a'), a => {
  const href = a.getAttribute('href') ?? a.getAttributeNS('http://www.w3.org/1999/xlink', 'href');
  return href === null ? null : {href, url: new URL(href, document.baseURI).href, text: (a.textContent || '').trim().slice(0, 80)};
}).filter(l => l !== null)`
	var ls []Link
	_, err := p.Eval(ctx, js, &ls)
	return ls, err
}

// CheckLinks follows every link of the page as a reader would and
// returns one line per link that leads nowhere:
//   - #id in the page: an element with that id exists;
//   - file://: the file or folder exists (a report links its run
//     folder's files relatively, so a moved folder keeps them);
//   - http(s) on loopback (`chaos serve`): a GET answers 200;
//   - anything else leaves the machine, which no zkchaos page may do.
//
// A link to #id of another page opens that page and looks for the id.
func (p *Page) CheckLinks(ctx context.Context) ([]string, error) {
	links, err := p.Links(ctx)
	if err != nil {
		return nil, err
	}
	var here string
	if _, err := p.Eval(ctx, "document.URL", &here); err != nil {
		return nil, err
	}
	ids := map[string]map[string]bool{} // document address -> its ids
	if ids[withoutFragment(here)], err = p.IDs(ctx); err != nil {
		return nil, err
	}
	var bad []string
	for _, l := range links {
		why, err := p.follow(ctx, l, ids)
		if err != nil {
			return nil, err
		}
		if why != "" {
			bad = append(bad, fmt.Sprintf("link %q (%s) -> %s: %s", l.Text, l.Href, l.URL, why))
		}
	}
	return bad, nil
}

// follow is why link l leads nowhere, "" when it resolves. ids caches
// the ids of the documents already opened.
func (p *Page) follow(ctx context.Context, l Link, ids map[string]map[string]bool) (string, error) {
	u, err := url.Parse(l.URL)
	if err != nil {
		return "not an address: " + err.Error(), nil
	}
	doc := withoutFragment(l.URL)
	if _, known := ids[doc]; !known {
		if why := reachable(ctx, u); why != "" {
			return why, nil
		}
	}
	if u.Fragment == "" {
		return "", nil
	}
	if _, known := ids[doc]; !known {
		if ids[doc], err = p.idsOf(ctx, doc); err != nil {
			return "", err
		}
	}
	if !ids[doc][u.Fragment] {
		return fmt.Sprintf("no element with id %q there", u.Fragment), nil
	}
	return "", nil
}

// reachable is why the document at u cannot be had, "" when it can.
func reachable(ctx context.Context, u *url.URL) string {
	switch {
	case u.Scheme == "file":
		if _, err := os.Stat(u.Path); err != nil {
			return "missing: " + err.Error()
		}
		return ""
	case (u.Scheme == "http" || u.Scheme == "https") && loopbackHost(u.Hostname()):
		return httpOK(ctx, withoutFragment(u.String()))
	}
	return "leaves the machine (only file:// and loopback links are allowed)"
}

// loopbackClient follows redirects only within loopback.
var loopbackClient = &http.Client{
	Timeout: 30 * time.Second,
	CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if !loopbackHost(req.URL.Hostname()) {
			return errors.New("redirected off loopback to " + req.URL.String())
		}
		return nil
	},
}

// httpOK is why a GET of addr does not answer 200, "" when it does.
func httpOK(ctx context.Context, addr string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := loopbackClient.Do(req)
	if err != nil {
		return err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "answered " + resp.Status
	}
	return ""
}

// idsOf opens the document at addr in a tab of its own and lists its ids.
func (p *Page) idsOf(ctx context.Context, addr string) (map[string]bool, error) {
	other, err := p.b.Open(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer other.Close()
	return other.IDs(ctx)
}

func withoutFragment(addr string) string {
	u, err := url.Parse(addr)
	if err != nil {
		return addr
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}
