package timeline

import (
	"cmp"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// run builds a history and an apply log by hand, on one clock (ms).
type run struct {
	evs  []history.Event
	log  []register.Entry
	wall int64 // the register's wall clock at run-clock 0
}

const ms = int64(time.Millisecond)

func newRun() *run { return &run{wall: 1_700_000_000 * 1e9} }

func (r *run) ev(t int64, p history.Process, typ history.Type, f, key string, v *history.Value, errText string) {
	r.evs = append(r.evs, history.Event{Time: t * ms, Process: p, Type: typ, F: f, Key: key, Value: v, Error: errText})
}

// op records an invocation at inv and its completion at done.
func (r *run) op(p history.Process, inv, done int64, typ history.Type, f, key string, v *history.Value) {
	r.ev(inv, p, history.Invoke, f, key, nil, "")
	r.ev(done, p, typ, f, key, v, "")
}

func (r *run) instant(t int64, p history.Process, f, key string, v *history.Value) {
	r.ev(t, p, history.Invoke, f, key, v, "")
	r.ev(t, p, history.OK, f, key, v, "")
}

// section is a whole critical section of p on key: acquire ok at t with
// tok, read, write n applied by the register at t+3, release at t+5.
func (r *run) section(p history.Process, key string, t, tok, n int64) {
	r.op(p, t-1, t, history.OK, history.FAcquire, key, &history.Value{Token: history.Int64(tok)})
	r.op(p, t, t+1, history.OK, history.FRead, key, &history.Value{N: history.Int64(n - 1), Token: history.Int64(tok)})
	r.op(p, t+2, t+4, history.OK, history.FWrite, key, &history.Value{N: history.Int64(n), Token: history.Int64(tok)})
	r.apply(t+3, key, int(p), tok, n, true)
	r.op(p, t+5, t+6, history.OK, history.FRelease, key, &history.Value{Token: history.Int64(tok)})
}

// apply appends an apply-log write committed at run-clock t (ms).
func (r *run) apply(t int64, key string, p int, tok, n int64, accepted bool) {
	e := register.Entry{Seq: int64(len(r.log) + 1), Wall: r.wall + t*ms, Op: register.OpWrite, Key: key,
		Token: tok, HasToken: true, Value: n, Process: p, Accepted: accepted, Mode: register.ModeOff}
	if !accepted {
		e.Reason, e.Mode = "stale token", register.ModeOn
	}
	r.log = append(r.log, e)
}

// pause records the nemesis pausing process p from..to (ms).
func (r *run) pause(p int, from, to int64) {
	v := &history.Value{Target: fmt.Sprintf("process %d", p), TargetProcess: history.Int(p), PID: 1000 + p}
	r.ev(from, history.Nemesis, history.Invoke, history.FPause, "", &history.Value{Target: "pause-holder"}, "")
	r.ev(from, history.Nemesis, history.OK, history.FPause, "", v, "")
	r.ev(to, history.Nemesis, history.Invoke, history.FResume, "", v, "")
	r.ev(to, history.Nemesis, history.OK, history.FResume, "", v, "")
}

// history sorts the events by time (stably) and numbers them.
func (r *run) history() []history.Event {
	slices.SortStableFunc(r.evs, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	for i := range r.evs {
		r.evs[i].Index = int64(i)
	}
	return r.evs
}

// input runs the real checkers the timeline reads on the run.
func (r *run) input(checks ...checker.Checker) Input {
	h := r.history()
	// The register commits in time order: seqs follow the wall clock.
	slices.SortStableFunc(r.log, func(a, b register.Entry) int { return cmp.Compare(a.Wall, b.Wall) })
	for i := range r.log {
		r.log[i].Seq = int64(i + 1)
	}
	in := checker.Input{History: h, ApplyLog: r.log, StartWall: r.wall}
	res := checker.Results{Checkers: map[string]checker.Result{}}
	for _, c := range checks {
		res.Checkers[c.Name] = c.Check(context.Background(), in)
	}
	return Input{History: h, ApplyLog: r.log, StartWall: r.wall, Results: res}
}

var doubleWriter = checker.Checker{Name: fence.NameDoubleWriter, Check: fence.CheckDoubleWriter}

// staleRun is the unfenced double write of a paused holder: p0 holds
// SKU-1 with token 10, is paused before its write, is retired when the
// write times out, p1 takes the lock (token 20) and writes 1, and p0,
// resumed, writes 1 too inside p1's tenure, then learns it lost the lock.
func staleRun(accepted bool) *run {
	r := newRun()
	r.op(0, 999, 1000, history.OK, history.FAcquire, "SKU-1", &history.Value{Token: history.Int64(10)})
	r.op(0, 1000, 1001, history.OK, history.FRead, "SKU-1", &history.Value{N: history.Int64(0)})
	r.ev(1002, 0, history.Invoke, history.FWrite, "SKU-1", &history.Value{N: history.Int64(1)}, "")
	r.pause(0, 1010, 7000)
	r.ev(3002, 0, history.Info, history.FWrite, "SKU-1", nil, "timeout")
	r.section(1, "SKU-1", 6990, 20, 1)
	r.apply(7001, "SKU-1", 0, 10, 1, accepted)
	r.instant(7002, 0, history.FLate, "SKU-1", &history.Value{Token: history.Int64(10), N: history.Int64(1), Of: history.FWrite})
	r.instant(7004, 0, history.FLost, "SKU-1", &history.Value{Token: history.Int64(10), State: "expired"})
	r.section(2, "SKU-2", 500, 5, 1)
	return r
}

// elements parses an SVG (it must be well-formed XML) and returns its
// elements by id, with their class and the href of the link around them.
type element struct {
	name, class, href string
}

func elements(t *testing.T, svgs ...[]byte) map[string]element {
	t.Helper()
	out := map[string]element{}
	for _, b := range svgs {
		d := xml.NewDecoder(strings.NewReader(string(b)))
		var hrefs []string
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("the SVG is not well-formed: %v", err)
			}
			switch x := tok.(type) {
			case xml.StartElement:
				attr := map[string]string{}
				for _, a := range x.Attr {
					attr[a.Name.Local] = a.Value
				}
				if x.Name.Local == "a" {
					hrefs = append(hrefs, attr["href"])
				}
				if id := attr["id"]; id != "" {
					if _, dup := out[id]; dup {
						t.Fatalf("id %q appears twice", id)
					}
					href := ""
					if len(hrefs) > 0 {
						href = hrefs[len(hrefs)-1]
					}
					out[id] = element{name: x.Name.Local, class: attr["class"], href: href}
				}
			case xml.EndElement:
				if x.Name.Local == "a" {
					hrefs = hrefs[:len(hrefs)-1]
				}
			}
		}
	}
	return out
}

func allSVG(d Drawing) [][]byte {
	out := [][]byte{d.Main}
	for _, z := range d.Zooms {
		out = append(out, z.SVG)
	}
	return out
}
