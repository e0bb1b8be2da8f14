package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// What each kind of figure includes, printed beside it and kept in the
// JSON, so nobody compares a lock-only figure with a full section.
const (
	// KindPairs: a create of an ephemeral-sequential node then its delete,
	// two writes per pair, by go-zookeeper clients of the controller, one
	// session each, under one parent (hot) or eight.
	KindPairs = "pairs"
	// KindLock: acquire then release through the worker protocol, nothing
	// in between (no register call, no hold, no think).
	KindLock = "lock"
	// KindSection: the whole critical section through the worker protocol:
	// acquire, register read, register write (fenced), release; no hold,
	// no think.
	KindSection = "section"
)

// Includes says in words what a figure of kind k counts.
func Includes(k string) string {
	switch k {
	case KindPairs:
		return "create(ephemeral-sequential)+delete, in-process go-zookeeper, no worker"
	case KindLock:
		return "acquire+release via the worker protocol; no register call, no hold/think"
	case KindSection:
		return "acquire+register read+fenced write+release via the worker protocol; no hold/think"
	}
	return ""
}

// Layouts.
const (
	Hot    = "hot"    // every client on one lock
	Spread = "8-keys" // client i on key i mod 8
)

// SpreadKeys is the number of keys of the Spread layout.
const SpreadKeys = 8

// Figure is one throughput measurement.
type Figure struct {
	Subject  string  `json:"subject"` // raw, or a --recipe value
	Kind     string  `json:"kind"`
	Layout   string  `json:"layout"`
	Clients  int     `json:"clients"`
	Ops      int64   `json:"ops"`    // completed in the window
	Failed   int64   `json:"failed"` // acquires or sections that did not complete ok
	Seconds  float64 `json:"seconds"`
	PerSec   float64 `json:"per_second"`
	Includes string  `json:"includes"`
	// CPUPerOp is the CPU milliseconds one operation cost in the window,
	// by role (RoleServers, ...; RoleMachine is every core's busy time).
	CPUPerOp map[string]float64 `json:"cpu_ms_per_op,omitempty"`
	// RequestsPerOp is the client requests the servers received per
	// operation (mntr's zk_packets_received, pings included; 0 unknown):
	// how many ZooKeeper round trips one operation costs.
	RequestsPerOp float64 `json:"zk_requests_per_op,omitempty"`
}

// Name identifies a figure: subject/kind/layout.
func (f Figure) Name() string { return f.Subject + "/" + f.Kind + "/" + f.Layout }

// rate fills PerSec from Ops and the window.
func (f *Figure) rate(window time.Duration) {
	f.Seconds = window.Seconds()
	if f.Seconds > 0 {
		f.PerSec = float64(f.Ops) / f.Seconds
	}
}

// Overhead compares one acquire+release through the worker protocol with
// the same recipe's acquire+release called in the controller's process,
// one client, one uncontended key, the two measured alternately.
type Overhead struct {
	Recipe      string  `json:"recipe"`
	Samples     int     `json:"samples"`
	DirectNS    int64   `json:"direct_median_ns"`
	WorkerNS    int64   `json:"worker_median_ns"`
	Fraction    float64 `json:"fraction"` // median(worker - direct) / median(direct), pairwise
	Includes    string  `json:"includes"`
	DirectRawNS []int64 `json:"-"`
	WorkerRawNS []int64 `json:"-"`
}

// settle computes the medians and the fraction from the samples. The
// fraction is the median of the paired differences (each worker sample
// minus the in-process one taken just before it) over the in-process
// median: pairing cancels the drift of a shared machine (a neighbour's
// burst slows both of a pair), which two separate medians do not.
func (o *Overhead) settle() {
	o.Samples = min(len(o.DirectRawNS), len(o.WorkerRawNS))
	o.DirectNS, o.WorkerNS = Median(o.DirectRawNS), Median(o.WorkerRawNS)
	diffs := make([]int64, o.Samples)
	for i := range diffs {
		diffs[i] = o.WorkerRawNS[i] - o.DirectRawNS[i]
	}
	o.Fraction = 0
	if o.DirectNS > 0 {
		o.Fraction = float64(Median(diffs)) / float64(o.DirectNS)
	}
}

// Median of xs (0 for none); xs is not changed.
func Median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Ratio is one figure over another.
type Ratio struct {
	Name  string  `json:"name"`
	Of    string  `json:"of"`
	Over  string  `json:"over"`
	Value float64 `json:"value"`
}

// Target is one of the project's throughput targets and whether this run
// met it.
// Known is false when a figure it needs was not measured (a subject left
// out): neither met nor not met.
type Target struct {
	Name  string  `json:"name"`
	Want  string  `json:"want"`
	Value float64 `json:"value"`
	Known bool    `json:"known"`
	Met   bool    `json:"met"`
}

// Verdict is the target's word in the output: met, not met or unknown.
func (t Target) Verdict() string {
	switch {
	case !t.Known:
		return "unknown"
	case t.Met:
		return "met"
	}
	return "not met"
}

// Result is bench.json.
type Result struct {
	RunID    string    `json:"run_id"`
	NetMode  string    `json:"net_mode"`
	Cluster  string    `json:"cluster"`
	Nodes    int       `json:"nodes"`
	Clients  int       `json:"clients"`
	Quick    bool      `json:"quick"`
	Warmup   float64   `json:"warmup_seconds"`
	Window   float64   `json:"window_seconds"`
	Start    time.Time `json:"start"`
	Figures  []Figure  `json:"figures"`
	Overhead *Overhead `json:"overhead,omitempty"`
	// Hello is the built-in worker's start, each way it was started.
	Hello   []Hello  `json:"hello,omitempty"`
	Ratios  []Ratio  `json:"ratios"`
	Targets []Target `json:"targets"`
	// Profiles are the pprof files written into the folder, by name.
	Profiles []string `json:"profiles,omitempty"`
}

// find returns the figure subject/kind/layout.
func (r *Result) find(subject, kind, layout string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.Subject == subject && f.Kind == kind && f.Layout == layout {
			return f, true
		}
	}
	return Figure{}, false
}

// ratio is of/over by figure, ok false when either is missing or zero.
func (r *Result) ratio(of, over [3]string) (Ratio, bool) {
	a, okA := r.find(of[0], of[1], of[2])
	b, okB := r.find(over[0], over[1], over[2])
	if !okA || !okB || b.PerSec == 0 {
		return Ratio{}, false
	}
	return Ratio{Name: a.Name() + " / " + b.Name(), Of: a.Name(), Over: b.Name(), Value: a.PerSec / b.PerSec}, true
}

// Settle computes the ratios (every subject's lock figure over the raw
// pairs and over zk-lock, per layout, and the same for whole sections)
// and the targets' verdicts from the figures and the overhead.
func (r *Result) Settle() {
	r.Ratios = nil
	var subjects []string
	for _, f := range r.Figures {
		if f.Subject != SubjectRaw && !slices.Contains(subjects, f.Subject) {
			subjects = append(subjects, f.Subject)
		}
	}
	for _, layout := range []string{Hot, Spread} {
		for _, s := range subjects {
			for _, pair := range [][2][3]string{
				{{s, KindLock, layout}, {SubjectRaw, KindPairs, layout}},
				{{s, KindLock, layout}, {ZKLock, KindLock, layout}},
				{{s, KindSection, layout}, {ZKLock, KindSection, layout}},
			} {
				if pair[0][0] == pair[1][0] {
					continue
				}
				if rt, ok := r.ratio(pair[0], pair[1]); ok {
					r.Ratios = append(r.Ratios, rt)
				}
			}
		}
	}
	r.Targets = r.targets()
}

// targets are the project's targets: the seed recipe on 8 keys reaches
// 0.9x ZooKeeper's raw create+delete pairs, on one hot lock it matches
// zk-lock, the harness adds under 5% to an acquisition, and the built-in
// worker says hello within HelloTarget of its exec (median, started
// directly).
func (r *Result) targets() []Target {
	atLeast := func(name string, want float64, of, over [3]string) Target {
		t := Target{Name: name, Want: fmt.Sprintf(">= %.2f", want)}
		if rt, ok := r.ratio(of, over); ok {
			t.Value, t.Known, t.Met = rt.Value, true, rt.Value >= want
		}
		return t
	}
	ts := []Target{
		atLeast("seed lock >= 0.9x raw pairs, 8 keys", 0.9, [3]string{Seed, KindLock, Spread}, [3]string{SubjectRaw, KindPairs, Spread}),
		atLeast("seed lock >= 1.0x zk-lock, one hot lock", 1.0, [3]string{Seed, KindLock, Hot}, [3]string{ZKLock, KindLock, Hot}),
	}
	ov := Target{Name: "harness overhead < 5% of an acquisition", Want: "< 0.05"}
	if r.Overhead != nil && r.Overhead.DirectNS > 0 {
		ov.Value, ov.Known, ov.Met = r.Overhead.Fraction, true, r.Overhead.Fraction < 0.05
	}
	return append(ts, ov, r.helloTarget())
}

// helloTarget judges the built-in worker's start on its direct figure:
// the namespace's figure adds `ip netns exec`, which is no part of the
// worker. Its name gives the starts measured (Config.HelloStarts), as
// the other targets are judged on whatever windows the bench had.
func (r *Result) helloTarget() Target {
	ms := HelloTarget.Seconds() * 1000
	t := Target{Name: fmt.Sprintf("worker exec to hello, median ms (%d starts)", HelloStarts), Want: fmt.Sprintf("<= %g", ms)}
	for _, h := range r.Hello {
		if h.Way == HelloDirect && h.Starts > 0 {
			v := float64(h.MedianNS) / 1e6
			t.Name = fmt.Sprintf("worker exec to hello, median ms (%d starts)", h.Starts)
			t.Value, t.Known, t.Met = v, true, v <= ms
		}
	}
	return t
}

// Write stores r as path (bench.json), indented.
func (r *Result) Write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode bench.json: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write bench.json: %w", err)
	}
	return nil
}

// Print writes the figures, ratios and targets for a reader.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "chaos bench: %d clients, %d-node %s ensemble (%s), window %.1fs after %.1fs warm-up per figure\n",
		r.Clients, r.Nodes, r.Cluster, r.NetMode, r.Window, r.Warmup)
	figs := slices.Clone(r.Figures)
	sort.SliceStable(figs, func(i, j int) bool { return figs[i].Kind < figs[j].Kind })
	for _, f := range figs {
		failed := ""
		if f.Failed > 0 {
			failed = fmt.Sprintf(" (%d failed)", f.Failed)
		}
		fmt.Fprintf(w, "  %-30s %9.1f/s%s   [%s]\n", f.Name(), f.PerSec, failed, f.Includes)
		if len(f.CPUPerOp) > 0 {
			fmt.Fprintf(w, "  %-30s %.2f ZooKeeper requests/op, CPU ms/op:%s\n", "", f.RequestsPerOp, cpuText(f.CPUPerOp))
		}
	}
	if o := r.Overhead; o != nil {
		fmt.Fprintf(w, "  overhead (%s): worker %s vs in-process %s per acquire+release, median of %d: %+.1f%%   [%s]\n",
			o.Recipe, time.Duration(o.WorkerNS), time.Duration(o.DirectNS), o.Samples, 100*o.Fraction, o.Includes)
	}
	for _, h := range r.Hello {
		fmt.Fprintf(w, "  worker start (%s, %s): exec to hello median %s, p95 %s over %d starts   [%s]\n",
			h.Recipe, h.Way, msText(h.MedianNS), msText(h.P95NS), h.Starts, h.Includes)
	}
	fmt.Fprintln(w, "ratios:")
	for _, rt := range r.Ratios {
		fmt.Fprintf(w, "  %-60s %.2f\n", rt.Name, rt.Value)
	}
	fmt.Fprintln(w, "targets:")
	for _, t := range r.Targets {
		fmt.Fprintf(w, "  %-45s want %-7s got %-6s %s\n", t.Name, t.Want, valueText(t), strings.ToUpper(t.Verdict()))
	}
}

// msText is a duration in milliseconds, to a tenth.
func msText(ns int64) string { return fmt.Sprintf("%.1fms", float64(ns)/1e6) }

func valueText(t Target) string {
	if !t.Known {
		return "-"
	}
	return fmt.Sprintf("%.3f", t.Value)
}

// cpuText is a figure's CPU per operation, the roles in a fixed order.
func cpuText(m map[string]float64) string {
	var b strings.Builder
	for _, role := range []string{RoleServers, RoleWorkers, RoleController, RoleRegister, RoleMachine} {
		if v, ok := m[role]; ok {
			fmt.Fprintf(&b, " %s %.2f", role, v)
		}
	}
	return b.String()
}
