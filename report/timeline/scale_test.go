package timeline

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/report/anchor"
)

// longRun simulates an unfenced lock run: per key, back-to-back critical
// sections of 7 ms (4 operations each), and every staleEvery-th holder
// paused before its write, retired when the write times out, and its
// stale write applied 100 ms later inside another holder's tenure.
func longRun(keys, sections, staleEvery int) *run {
	r := newRun()
	tok := int64(0)
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("SKU-%d", k+1)
		t, n := int64(100), int64(0)
		for i := 0; i < sections; i++ {
			p := history.Process(k*5 + i%5)
			tok++
			if i%staleEvery == staleEvery/2 {
				p = history.Process(100_000 + k*sections + i) // retired: never seen again
				r.op(p, t-1, t, history.OK, history.FAcquire, key, &history.Value{Token: history.Int64(tok)})
				r.op(p, t, t+1, history.OK, history.FRead, key, &history.Value{N: history.Int64(n)})
				r.ev(t+2, p, history.Invoke, history.FWrite, key, &history.Value{N: history.Int64(n + 1)}, "")
				r.pause(int(p), t+2, t+99)
				r.ev(t+52, p, history.Info, history.FWrite, key, nil, "timeout")
				r.apply(t+100, key, int(p), tok, n+1, true)
				r.instant(t+101, p, history.FLate, key, &history.Value{Token: history.Int64(tok), N: history.Int64(n + 1), Of: history.FWrite})
				r.instant(t+102, p, history.FLost, key, &history.Value{Token: history.Int64(tok), State: "expired"})
				t += 10
				continue
			}
			n++
			r.section(p, key, t, tok, n)
			t += 7
		}
	}
	return r
}

func TestLaneOverTheBoundIsSummarised(t *testing.T) {
	in := longRun(1, 400, 200).input(doubleWriter)
	m := Of(in)
	dr := Render(m, Options{MaxPerLane: 100})
	notes := strings.Join(dr.Notes, " ")
	if !strings.Contains(notes, "Summarised: 1 of 1 lanes") || !strings.Contains(notes, "SKU-1: 400 tenures and 400 writes summarised") {
		t.Fatalf("the page must say what it summarised: %q", notes)
	}
	main := string(dr.Main)
	if strings.Count(main, `class="tl-hold"`) == 0 || strings.Count(main, `class="tl-wbin"`) == 0 {
		t.Error("a summarised lane draws its bins")
	}
	if bars := strings.Count(main, `class="tl-b0"`) + strings.Count(main, `class="tl-b1"`); bars > 10 {
		t.Errorf("%d tenures drawn one by one in a summarised lane; want only the notable ones", bars)
	}
	els := elements(t, allSVG(dr)...)
	var d fence.DoubleWriterDetails
	if err := in.Results.Checkers[fence.NameDoubleWriter].DecodeDetails(&d); err != nil || len(d.Violations) < 2 {
		t.Fatalf("want at least 2 double writes in the simulated run (%v)", err)
	}
	for i, v := range d.Violations {
		if _, ok := els[anchor.Violation(fence.NameDoubleWriter, i)]; !ok {
			t.Errorf("violation %d lost in the summary: %s", i, v.Message)
		}
		for _, s := range v.Seqs {
			if _, ok := els[anchor.Write(s)]; !ok {
				t.Errorf("write seq %d of violation %d is not drawn on its own", s, i)
			}
		}
	}
	if len(dr.Zooms) == 0 {
		t.Error("no zoom strip around the violations")
	}
	// Under the bound, nothing is summarised.
	if dr := Render(m, Options{MaxPerLane: 1000}); strings.Contains(strings.Join(dr.Notes, " "), "summarised") {
		t.Errorf("a lane under the bound must be drawn one by one: %q", dr.Notes)
	}
}

func TestSizeAt100kOperations(t *testing.T) {
	r := longRun(8, 3125, 400) // 8 x 3,125 critical sections of 4 operations
	in := r.input(doubleWriter)
	ops := 0
	for _, e := range in.History {
		if e.Type == history.Invoke {
			ops++
		}
	}
	start := time.Now()
	m := Of(in)
	dr := Render(m, Options{})
	took := time.Since(start)
	size := 0
	for _, b := range allSVG(dr) {
		size += len(b)
	}
	t.Logf("%d operations, %d apply-log entries, %d marks: main %d KB, %d zoom strips, total %d KB, in %v",
		ops, len(in.ApplyLog), len(m.Marks), len(dr.Main)/1024, len(dr.Zooms), size/1024, took)
	if ops < 100_000 {
		t.Fatalf("the simulated run has %d operations, want 100k", ops)
	}
	if size > 1_500_000 {
		t.Errorf("the timeline takes %d bytes at 100k operations, over 1.5 MB", size)
	}
	els := elements(t, allSVG(dr)...)
	for _, mk := range m.Marks {
		if _, ok := els[anchor.Violation(mk.Checker, mk.Index)]; !ok {
			t.Errorf("violation %s #%d has no mark", mk.Checker, mk.Index)
		}
	}
	if !strings.Contains(strings.Join(dr.Notes, " "), "summarised") {
		t.Error("at 100k operations the page must say what it summarised")
	}
}
