package timeline

import (
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/report/anchor"
)

func TestTenuresOfAPausedRetiredHolder(t *testing.T) {
	m := Of(staleRun(true).input(doubleWriter))
	if m.Workload != WorkloadLock || len(m.Lanes) != 2 || m.Lanes[0].Key != "SKU-1" {
		t.Fatalf("want lock lanes SKU-1, SKU-2, got %q %d lanes", m.Workload, len(m.Lanes))
	}
	l := m.Lanes[0]
	if len(l.Tenures) != 2 || l.Rows != 2 {
		t.Fatalf("SKU-1: want 2 tenures in 2 rows (they overlap), got %d in %d", len(l.Tenures), l.Rows)
	}
	stale, newer := l.Tenures[0], l.Tenures[1]
	if stale.Process != 0 || stale.Token != 10 || stale.From != 1000*ms || stale.To != 7004*ms || stale.Ended != EndLost {
		t.Errorf("stale tenure: %+v", stale)
	}
	if stale.RetiredAt != 3002*ms {
		t.Errorf("stale holder retired at %d, want 3.002 s", stale.RetiredAt)
	}
	if len(stale.Faults) != 1 || stale.Faults[0].F != history.FPause || stale.Faults[0].From != 1010*ms || stale.Faults[0].To != 7000*ms {
		t.Errorf("stale holder's pause: %+v", stale.Faults)
	}
	if newer.Process != 1 || newer.Token != 20 || newer.To != 6995*ms || newer.Ended != EndReleased || newer.Row == stale.Row {
		t.Errorf("newer tenure: %+v", newer)
	}
	if len(l.Writes) != 2 || l.Writes[1].Process != 0 || l.Writes[1].At != 7001*ms {
		t.Fatalf("SKU-1 writes: %+v", l.Writes)
	}
}

func TestDoubleWriteIsMarked(t *testing.T) {
	in := staleRun(true).input(doubleWriter)
	var d fence.DoubleWriterDetails
	if err := in.Results.Checkers[fence.NameDoubleWriter].DecodeDetails(&d); err != nil || len(d.Violations) == 0 {
		t.Fatalf("the checker found no double write (%v): the test run is wrong", err)
	}
	m := Of(in)
	dr := Render(m, Options{})
	els := elements(t, allSVG(dr)...)
	for i, v := range d.Violations {
		id := anchor.Violation(fence.NameDoubleWriter, i)
		e, ok := els[id]
		if !ok {
			t.Fatalf("no element %s for %s", id, v.Message)
		}
		if e.class != "tl-mark" || e.href != anchor.Href(anchor.Story(fence.NameDoubleWriter, i)) {
			t.Errorf("%s: class %q, link %q", id, e.class, e.href)
		}
	}
	mk := m.Marks[0]
	if !mk.Placed || mk.At != 7001*ms || len(mk.Tenures) != 2 {
		t.Errorf("the mark must stand at the stale write and involve both tenures: %+v", mk)
	}
	if e := els[anchor.Write(3)]; e.class != "tl-wv" {
		t.Errorf("the stale write must be drawn as a violation dot, got %+v", e)
	}
	if len(dr.Zooms) != 1 || !strings.Contains(dr.Zooms[0].Caption, "double-writer #0") {
		t.Errorf("want one zoom strip around the double write, got %d", len(dr.Zooms))
	}
	if !strings.Contains(string(dr.Zooms[0].SVG), `href="#story-double-writer-0"`) {
		t.Error("the zoom strip must link the violation's story")
	}
}

func TestRejectedStaleWriteIsDrawn(t *testing.T) {
	in := staleRun(false).input(doubleWriter)
	dr := Render(Of(in), Options{})
	els := elements(t, allSVG(dr)...)
	e, ok := els[anchor.Write(3)]
	if !ok || e.class != "tl-wr" {
		t.Fatalf("the rejected write must be drawn as a red cross with its id, got %+v (found %v)", e, ok)
	}
	if len(dr.Zooms) != 1 || !strings.Contains(dr.Zooms[0].Caption, "1 write rejected by the register") {
		t.Errorf("want one zoom strip around the rejected write, got %d", len(dr.Zooms))
	}
	if !strings.Contains(string(dr.Main), "rejected: stale token") {
		t.Error("the rejected write's tooltip must say why")
	}
}

func TestGrantCheckersAreMarked(t *testing.T) {
	r := newRun()
	r.section(0, "SKU-1", 100, 20, 1)
	r.section(1, "SKU-1", 200, 10, 2) // a token that went down
	in := r.input(checker.Checker{Name: lock.NameTokenOrder, Check: lock.CheckTokenOrder})
	dr := Render(Of(in), Options{})
	els := elements(t, allSVG(dr)...)
	if _, ok := els[anchor.Violation(lock.NameTokenOrder, 0)]; !ok {
		t.Fatal("the token regression has no mark")
	}
}

func TestUnplacedViolationsAreListed(t *testing.T) {
	in := staleRun(true).input(doubleWriter)
	in.StartWall = 0
	dr := Render(Of(in), Options{})
	if len(dr.Unplaced) == 0 || dr.Unplaced[0].Checker != fence.NameDoubleWriter {
		t.Fatalf("without a start wall clock the violations must be listed, got %+v", dr.Unplaced)
	}
	if !strings.Contains(strings.Join(dr.Notes, " "), "writes of the apply log are not drawn") {
		t.Errorf("the page must say why the writes are missing: %q", dr.Notes)
	}
	if _, ok := elements(t, dr.Main)[anchor.Violation(fence.NameDoubleWriter, 0)]; ok {
		t.Error("an unplaced violation must not also be drawn")
	}
}

func TestConfigHasNoLocks(t *testing.T) {
	r := newRun()
	r.op(0, 1, 2, history.OK, history.FUpdate, "config", &history.Value{Version: history.Int64(1)})
	dr := Render(Of(r.input()), Options{})
	if dr.Main != nil || len(dr.Notes) != 1 || !strings.Contains(dr.Notes[0], "No locks") {
		t.Fatalf("want no figure and a note, got %d bytes, %q", len(dr.Main), dr.Notes)
	}
}

func TestElectionLane(t *testing.T) {
	r := newRun()
	r.op(3, 10, 20, history.OK, history.FCampaign, "billing", &history.Value{Token: history.Int64(77)})
	r.op(3, 30, 31, history.OK, history.FResign, "billing", nil)
	m := Of(r.input())
	if m.Workload != WorkloadElection || len(m.Lanes) != 1 || m.Lanes[0].Key != "billing" {
		t.Fatalf("want one leadership lane, got %q %+v", m.Workload, m.Lanes)
	}
	if tn := m.Lanes[0].Tenures; len(tn) != 1 || tn[0].Token != 77 || tn[0].To != 30*ms {
		t.Fatalf("leadership: %+v", tn)
	}
}

func TestTextFromTheRunIsEscaped(t *testing.T) {
	r := newRun()
	key := `SKU-<script>alert("x")</script>&`
	r.section(0, key, 100, 1, 1)
	r.pause(0, 100, 102)
	dr := Render(Of(r.input()), Options{})
	if strings.Contains(string(dr.Main), "<script>") {
		t.Fatal("markup from the history reached the SVG unescaped")
	}
	elements(t, dr.Main) // well-formed
}

func TestNiceWidth(t *testing.T) {
	for raw, want := range map[int64]int64{1: 1, 3: 5, 120 * ms: 200 * ms, 250 * ms: 500 * ms, 1001 * ms: 2000 * ms} {
		if got := niceWidth(raw); got != want {
			t.Errorf("niceWidth(%d) = %d, want %d", raw, got, want)
		}
	}
}

func TestWrongTokenIsMarked(t *testing.T) {
	r := newRun()
	r.op(0, 99, 100, history.OK, history.FAcquire, "SKU-1", &history.Value{Token: history.Int64(20)})
	r.op(0, 101, 102, history.Fail, history.FWrite, "SKU-1", &history.Value{N: history.Int64(1), Token: history.Int64(5), Current: history.Int64(19)})
	r.evs[len(r.evs)-1].Error = "rejected: stale token"
	in := r.input(checker.Checker{Name: fence.NameWrongToken, Check: fence.CheckWrongToken})
	var d fence.WrongTokenDetails
	if err := in.Results.Checkers[fence.NameWrongToken].DecodeDetails(&d); err != nil || len(d.Violations) != 1 {
		t.Fatalf("the checker must find the wrong token (%v, %+v): the test run is wrong", err, d)
	}
	m := Of(in)
	if mk := m.Marks[0]; !mk.Placed || len(mk.Tenures) != 1 || mk.At != 102*ms {
		t.Errorf("the mark must stand at the rejection, with the holder's tenure: %+v", mk)
	}
	if _, ok := elements(t, Render(m, Options{}).Main)[anchor.Violation(fence.NameWrongToken, 0)]; !ok {
		t.Fatal("the wrong token has no mark")
	}
}

func TestViolationsZoomFirst(t *testing.T) {
	r := staleRun(true)
	r.apply(200, "SKU-2", 9, 1, 1, false) // a rejection well before the double write
	dr := Render(Of(r.input(doubleWriter)), Options{MaxZooms: 1})
	if len(dr.Zooms) != 1 || !strings.Contains(dr.Zooms[0].Caption, "double-writer #0") {
		t.Fatalf("the one zoom strip allowed must show the violation, got %+v", dr.Zooms)
	}
	if !strings.Contains(strings.Join(dr.Notes, " "), "Zoom strips are drawn for 1 of 2 stretches") {
		t.Errorf("the page must say a stretch was left out: %q", dr.Notes)
	}
}

func TestRetiredLeaderIsDrawnOn(t *testing.T) {
	r := newRun()
	r.op(3, 10, 20, history.OK, history.FCampaign, "billing", &history.Value{Token: history.Int64(77)})
	r.ev(30, 3, history.Invoke, history.FComplete, "t1", nil, "")
	r.pause(3, 31, 5000)
	r.ev(2030, 3, history.Info, history.FComplete, "t1", nil, "timeout")
	r.instant(5002, 3, history.FDemoted, "billing", &history.Value{Token: history.Int64(77), State: "expired"})
	tn := Of(r.input()).Lanes[0].Tenures
	if len(tn) != 1 || tn[0].RetiredAt != 30*ms || tn[0].To != 5002*ms || len(tn[0].Faults) != 1 {
		t.Fatalf("the retired leader must be drawn to its demotion, paused: %+v", tn)
	}
}

func TestTwoTimelinesShareAPage(t *testing.T) {
	// chaos compare draws two runs on one page: every id prefixed (no
	// clash), every mark linking the story on its own run's report.
	in := staleRun(true).input(doubleWriter)
	m := Of(in)
	a := Render(m, Options{Prefix: "a-", StoryPage: "A/report.html"})
	b := Render(m, Options{Prefix: "b-", StoryPage: "B/report.html"})
	els := elements(t, append(allSVG(a), allSVG(b)...)...) // fails on a duplicate id
	for _, side := range []string{"a", "b"} {
		e, ok := els[side+"-"+anchor.Violation(fence.NameDoubleWriter, 0)]
		want := strings.ToUpper(side) + "/report.html" + anchor.Href(anchor.Story(fence.NameDoubleWriter, 0))
		if !ok || e.href != want {
			t.Errorf("side %s: mark %+v, want a link to %s", side, e, want)
		}
	}
	for id := range els {
		if !strings.HasPrefix(id, "a-") && !strings.HasPrefix(id, "b-") {
			t.Errorf("id %q is not prefixed", id)
		}
	}
}
