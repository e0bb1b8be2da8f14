package report

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/linear"
	"github.com/zkchaos/zkchaos/checker/suite"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/report/anchor"
	"github.com/zkchaos/zkchaos/resource/register"
)

const hostile = `<script>alert("x")</script>`

func entry(seq int64, key string, token int64, process int, value int64) register.Entry {
	return register.Entry{Seq: seq, Op: register.OpWrite, Key: key, Token: token, HasToken: true,
		Value: value, Process: process, Accepted: true}
}

func page(t *testing.T) Page {
	t.Helper()
	hist := []history.Event{
		{Index: 0, Time: 1e9, Process: history.Nemesis, Type: history.Invoke, F: history.FPause, Value: &history.Value{Target: "worker-1"}},
		{Index: 1, Time: 2e9, Process: history.Nemesis, Type: history.OK, F: history.FPause, Value: &history.Value{Target: "worker-1", PID: 4242, Verified: history.Bool(true)}},
		{Index: 2, Time: 3e9, Process: 0, Type: history.Invoke, F: history.FAcquire, Key: hostile},
		{Index: 3, Time: 4e9, Process: 0, Type: history.OK, F: history.FAcquire, Key: hostile, Value: &history.Value{Token: history.Int64(6)}},
		{Index: 4, Time: 5e9, Process: history.Nemesis, Type: history.Invoke, F: history.FResume, Value: &history.Value{Target: hostile}},
	}
	log := []register.Entry{
		entry(1, "SKU-1", 5, 1, 1), entry(2, "SKU-1", 6, 2, 1),
		entry(3, hostile, 6, 0, 1), entry(4, hostile, 5, 3, 2),
	}
	res := suite.RunAll(context.Background(), checker.Input{History: hist, ApplyLog: log}, nil)
	if res.Valid != checker.Invalid {
		t.Fatalf("fixture verdict = %v", res.Valid)
	}
	return Page{Name: "lock-" + hostile, Dir: "results/lock/20250102T030405Z", HistoryTruncated: true, Start: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Config:  []byte(`{"workers": 8, "fencing": "off", "note": "` + strings.ReplaceAll(hostile, `"`, `\"`) + `"}`),
		Results: res, Nemesis: hist, History: hist, Resources: soakSamples(5, func(float64) uint64 { return 50 << 20 })}
}

// parse checks the page is well-formed HTML as far as a tokenizer that
// knows HTML's void elements and entities can tell, and returns its text.
func parse(t *testing.T, b []byte) string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(b)))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	var text strings.Builder
	var stack []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("report does not parse: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			stack = append(stack, x.Name.Local)
			if x.Name.Local == "script" {
				t.Error("report contains a script element")
			}
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1] != x.Name.Local {
				t.Fatalf("unbalanced </%s> (open: %v)", x.Name.Local, stack)
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			text.Write(x)
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements %v", stack)
	}
	return text.String()
}

func TestWrite(t *testing.T) {
	p := page(t)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := Write(path, p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := parse(t, b)
	html := string(b)

	if !strings.Contains(html, `class="verdict invalid"`) || !strings.Contains(text, "INVALID") {
		t.Error("verdict missing or not coloured as invalid")
	}
	var d fence.DoubleWriterDetails
	if err := p.Results.Checkers[fence.NameDoubleWriter].DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	if len(d.Violations) < 2 {
		t.Fatalf("fixture has %d violations", len(d.Violations))
	}
	for _, v := range d.Violations {
		if !strings.Contains(text, v.Key) || !strings.Contains(text, v.Message) {
			t.Errorf("violation on %q not shown", v.Key)
		}
	}
	if strings.Contains(html, "<script>") || !strings.Contains(html, "&lt;script&gt;") {
		t.Error("hostile key not escaped")
	}
	for _, want := range []string{"double-writer", "stats", "acquire", "pause", "resume", "4242", "no completion",
		"workers", "fencing", "2025-01-02T03:04:05Z", "results/lock/20250102T030405Z", "cut off"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The latency figure, inline: one acquire ok, the pause shaded, and
	// its caption (which says how it was drawn) under it.
	if !strings.Contains(html, `<figure class="plot"><svg`) || !strings.Contains(text, "ok (1)") ||
		!regexp.MustCompile(`</svg>\s*<figcaption>Latency of every completed worker operation`).MatchString(html) {
		t.Error("no inline latency figure with its caption")
	}
	for _, ext := range []string{"http://", "https://", "<link", "src="} {
		if strings.Contains(html, ext) {
			t.Errorf("report is not self-contained: has %q", ext)
		}
	}
}

func TestWriteFromResultsFile(t *testing.T) {
	// chaos check re-renders from results.json, where details come back raw.
	dir := t.TempDir()
	p := page(t)
	if err := checker.WriteResults(filepath.Join(dir, "results.json"), p.Results); err != nil {
		t.Fatal(err)
	}
	res, err := checker.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Results = res
	p.Config = []byte("not json <b>")
	if err := Write(filepath.Join(dir, "report.html"), p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	text := parse(t, b)
	if !strings.Contains(text, "SKU-1") || !strings.Contains(text, "lost-update") || !strings.Contains(text, "not json <b>") {
		t.Error("report from results.json lacks the violations or the raw config")
	}
}

func TestWriteEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.html")
	if err := Write(path, Page{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if text := parse(t, b); !strings.Contains(text, "UNKNOWN") {
		t.Error("an empty page must say unknown")
	}
	if err := Write(filepath.Join(t.TempDir(), "no", "such", "report.html"), Page{}); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// TestLinearizabilitySection: the porcupine checkers' keys are listed,
// failing first, with links to their pages, and the mutex caveat shown.
func TestLinearizabilitySection(t *testing.T) {
	d := linear.LinearDetails{Model: "owner-aware mutex", Partitions: 2, Operations: 9, Note: "Under SIGSTOP of a holder",
		FailingKeys: []string{"SKU-2"}, Visualizations: map[string]string{"SKU-2": "porcupine/mutex-SKU-2.html"},
		Segments: 4, UncutKeys: []string{"SKU-2"},
		Keys: map[string]linear.PartitionResult{
			"SKU-1": {Valid: checker.Valid, Operations: 4, Segments: 3, LargestSegment: 2},
			"SKU-2": {Valid: checker.Invalid, Operations: 5, Visualization: "porcupine/mutex-SKU-2.html", Segments: 1, LargestSegment: 5,
				Uncut: "one segment: an operation invoked at 1.000s was open to the end"},
		}}
	res := checker.Results{Valid: checker.Valid, Checkers: map[string]checker.Result{
		linear.NameMutex:    {Valid: checker.Invalid, Error: "not linearizable: keys SKU-2", Details: d},
		linear.NameRegister: {Valid: checker.Valid, Details: linear.LinearDetails{Model: "fenced register", Keys: map[string]linear.PartitionResult{}}},
	}, Order: []string{linear.NameRegister, linear.NameMutex}}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := Write(path, Page{Name: "x", Results: res}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := parse(t, b)
	if !strings.Contains(string(b), `href="porcupine/mutex-SKU-2.html"`) {
		t.Error("no link to the failing key's page")
	}
	if !strings.Contains(text, "Under SIGSTOP of a holder") || !strings.Contains(text, "fenced register") {
		t.Error("model or caveat missing")
	}
	for _, want := range []string{"Checked in 4 segments", "keys that could not be cut: SKU-2", "Not cut: one segment: an operation invoked at 1.000s"} {
		if !strings.Contains(text, want) {
			t.Errorf("segments: %q missing", want)
		}
	}
	if i, j := strings.Index(text, "SKU-2"), strings.Index(text, "SKU-1"); i < 0 || j < 0 || i > j {
		t.Errorf("failing key not listed first (SKU-2 at %d, SKU-1 at %d)", i, j)
	}
}

func TestDefaultLinksOnlyWhatExists(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"history.jsonl", "results.json", "controller.log"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "workers"), 0o755); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range DefaultLinks(dir) {
		got = append(got, l.Href)
	}
	want := []string{"history.jsonl", "results.json", "controller.log", "workers/"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("links %v, want %v (existing files only, in reading order)", got, want)
	}
}

// TestTimelineSection: the timeline sits in its section, after the
// figures, and every double write of results.json has its mark there
// (placed on the run's clock with the apply log's wall clock, or listed
// in words without it), linked to its story.
func TestTimelineSection(t *testing.T) {
	const startWall = int64(1_700_000_000e9)
	for _, placed := range []bool{true, false} {
		p := page(t)
		p.ApplyLog = []register.Entry{
			entry(1, "SKU-1", 5, 1, 1), entry(2, "SKU-1", 6, 2, 1),
			entry(3, hostile, 6, 0, 1), entry(4, hostile, 5, 3, 2),
		}
		if placed {
			p.StartWall = startWall
			for i := range p.ApplyLog {
				p.ApplyLog[i].Wall = startWall + int64(i+4)*1e9
			}
		}
		path := filepath.Join(t.TempDir(), "report.html")
		if err := Write(path, p); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		parse(t, b)
		html := string(b)
		sec := strings.Index(html, `<section id="`+anchor.Timeline+`">`)
		if sec < 0 || sec > strings.Index(html, "<h2>Figures</h2>") {
			t.Fatalf("placed=%v: no timeline section before the figures", placed)
		}
		var d fence.DoubleWriterDetails
		if err := p.Results.Checkers[fence.NameDoubleWriter].DecodeDetails(&d); err != nil {
			t.Fatal(err)
		}
		for i := range d.Violations {
			id := anchor.Violation(fence.NameDoubleWriter, i)
			if !strings.Contains(html[sec:], `id="`+id+`"`) {
				t.Errorf("placed=%v: no mark %s in the timeline", placed, id)
			}
			if !strings.Contains(html[sec:], `href="`+anchor.Href(anchor.Story(fence.NameDoubleWriter, i))+`"`) {
				t.Errorf("placed=%v: mark %s does not link its story", placed, id)
			}
		}
	}
}

// TestReadingOrder: the page answers what went wrong, when and why before
// the numbers: verdict, checkers, the timeline (one screen, its marks
// linking the stories), the stories, runbook evidence,
// then figures and tables; the contents links every section shown.
func TestReadingOrder(t *testing.T) {
	p := page(t)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := Write(path, p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	last := -1
	for _, id := range []string{"verdict", "contents", "checkers", anchor.Timeline, anchor.Stories, anchor.Runbook, anchor.Figures,
		anchor.Soak, "double-writes", "linearizability", "operations", anchor.Metrics, "nemesis", "configuration", "raw-files"} {
		at := strings.Index(html, `id="`+id+`"`)
		if at < 0 {
			t.Errorf("no section %q", id)
			continue
		}
		if at < last {
			t.Errorf("section %q is out of the reading order", id)
		}
		last = at
		if id != "verdict" && id != "contents" && !strings.Contains(html, `href="#`+id+`"`) {
			t.Errorf("the contents do not link %q", id)
		}
	}
}

// TestCompletionStoppedAtFirst: a run stopped at its first violation is
// shown as such, not as an incomplete run, and the page says it could not
// have been valid.
func TestCompletionStoppedAtFirst(t *testing.T) {
	res := checker.Results{Valid: checker.Invalid, Completion: &checker.Completion{StoppedAtFirst: true, Phase: "done",
		ReachedNS: int64(8 * time.Second), TimeLimitNS: int64(30 * time.Second), FinalPhase: true,
		Why: "stopped at its first violation (double-writer)"}}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := Write(path, Page{Name: "x", Results: res}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := parse(t, b)
	if !strings.Contains(text, "Run stopped at its first violation") || !strings.Contains(text, "the workload ran 8s of 30s") ||
		!strings.Contains(text, "never valid") || strings.Contains(text, "Run incomplete") {
		t.Errorf("completion paragraph: %s", text)
	}
}
