package report

import (
	"fmt"
	"html/template"
	"path"
	"strings"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/observe/monitor"
	"github.com/zkchaos/zkchaos/report/anchor"
)

// maxSnapshots bounds the runbook's snapshots: the first violations tell
// the story, the rest are counted.
const maxSnapshots = 20

// The runbook section: for each violation the monitor's last sample taken
// before it, laid out as an operator following the runbook
// (docs/background.md#what-the-runbook-asks) would read it with zkCli (ls and stat of the lock directory, each node's
// ephemeralOwner, whether that session is still connected) and mntr.
const runbookSource = `<h2 id="{{.Runbook.ID}}">Runbook evidence</h2>
{{with .Runbook}}{{if .Note}}<p>{{.Note}}</p>{{else}}<p>The monitor sampled every lock directory and every server's <code>mntr</code> and <code>cons</code>
{{.Samples}} times ({{.Interval}} at its fixed interval, {{.Steps}} at nemesis steps{{if .Dropped}}, {{.Dropped}} step samples dropped{{end}}), from {{.Span}};
{{.Errors}} samples could not read everything (a paused or cut-off server is an error in its sample, not a failure of the run). Raw samples: <a href="monitor.jsonl">monitor.jsonl</a>.</p>{{end}}
{{if .Snapshots}}<p>For each violation, the last sample taken wholly before it{{if .Omitted}} (first {{len .Snapshots}} violations; {{.Omitted}} more not shown){{end}}:</p>
{{range .Snapshots}}<div class="violation" id="{{.ID}}">
<p><strong>{{.Checker}} #{{.Index}}</strong>: {{.What}}{{if .At}} at {{.At}}{{end}}.</p>
{{if .None}}<p>No snapshot: {{.None}}</p>{{else}}<p>Sample {{.Seq}} ({{.Why}}) at {{.Taken}}, {{.Before}} before the violation.</p>
<pre>{{.ZkCli}}</pre>
<table>
<tr><th>server</th><th>mntr state</th><th>latency min/avg/max ms</th><th>outstanding</th><th>znodes</th><th>watches</th><th>ephemerals</th><th>connections</th><th>sessions</th><th>cons: sessions listed</th></tr>
{{range .Servers}}<tr><td>{{.Name}}</td>{{if .MntrError}}<td colspan="8">{{.MntrError}}</td>{{else}}<td>{{.State}}</td><td class="n">{{.Latency}}</td><td class="n">{{.Outstanding}}</td><td class="n">{{.Znodes}}</td><td class="n">{{.Watches}}</td><td class="n">{{.Ephemerals}}</td><td class="n">{{.Connections}}</td><td class="n">{{.Sessions}}</td>{{end}}<td>{{if .ConsError}}{{.ConsError}}{{else}}{{.Listed}}{{end}}</td></tr>
{{end}}</table>{{end}}
</div>
{{end}}{{end}}{{end}}`

var _ = template.Must(pageTmpl.New("runbook").Parse(runbookSource))

// runbookView is the runbook section.
type runbookView struct {
	ID string
	// Note says why there are no samples.
	Note                                      string
	Samples, Interval, Steps, Dropped, Errors int
	Span                                      string
	Snapshots                                 []snapshotView
	Omitted                                   int
}

// snapshotView is one violation's snapshot.
type snapshotView struct {
	ID, Checker string
	Index       int
	What, At    string
	// None says why there is no snapshot; else the sample.
	None               string
	Seq                int
	Why, Taken, Before string
	ZkCli              string
	Servers            []serverView
}

// serverView is one server's row: mntr and what cons listed.
type serverView struct {
	Name, State, Latency, MntrError, ConsError, Listed              string
	Outstanding, Znodes, Watches, Ephemerals, Connections, Sessions int64
}

// violationAt is a violation of a lock or resource checker placed on the
// run's clock.
type violationAt struct {
	checker string
	index   int
	key     string
	procs   []int // the processes the violation names
	what    string
	t       int64
	known   bool // t is known
}

// violationTimes lists the violations of double-writer, grant-overlap and
// token-order in results.json, with the index each has in its checker's
// details (grant-overlap: its overlaps, then its false releases) and its
// time: the violating apply-log entry's commit (register wall clock less
// the run's start), the intruder's grant, the false release's invocation,
// the second grant of a token regression.
func violationTimes(in Page) []violationAt {
	var out []violationAt
	if d, ok := decode[fence.DoubleWriterDetails](in.Results, fence.NameDoubleWriter); ok {
		for i, v := range d.Violations {
			va := violationAt{checker: fence.NameDoubleWriter, index: i, key: v.Key, procs: v.Processes,
				what: fmt.Sprintf("%s on %s by processes %s", v.Kind, v.Key, strings.Trim(fmt.Sprint(v.Processes), "[]"))}
			if n := len(v.Entries); n > 0 && in.StartWall > 0 && v.Entries[n-1].Wall > 0 {
				va.t, va.known = v.Entries[n-1].Wall-in.StartWall, true
				va.what += fmt.Sprintf(" (apply-log seq %d)", v.Entries[n-1].Seq)
			}
			out = append(out, va)
		}
	}
	if d, ok := decode[lock.GrantOverlapDetails](in.Results, lock.NameGrantOverlap); ok {
		for i, o := range d.Overlaps {
			out = append(out, violationAt{checker: lock.NameGrantOverlap, index: i, key: o.Key, t: o.GrantedNS, known: true,
				procs: []int{o.Holder, o.Intruder},
				what:  fmt.Sprintf("process %d granted %s while process %d held it", o.Intruder, o.Key, o.Holder)})
		}
		for j, f := range d.FalseReleases {
			out = append(out, violationAt{checker: lock.NameGrantOverlap, index: len(d.Overlaps) + j, key: f.Key, t: f.ReleaseNS, known: true,
				procs: []int{f.Holder},
				what:  fmt.Sprintf("process %d released %s after its session %s was gone", f.Holder, f.Key, f.Session)})
		}
	}
	if d, ok := decode[lock.TokenOrderDetails](in.Results, lock.NameTokenOrder); ok {
		for i, r := range d.Regressions {
			out = append(out, violationAt{checker: lock.NameTokenOrder, index: i, key: r.Key, t: r.TimesNS[1], known: true,
				procs: r.Processes[:],
				what:  fmt.Sprintf("token %d granted on %s after token %d", r.Tokens[1], r.Key, r.Tokens[0])})
		}
	}
	return out
}

// decode reads the details of the named checker; false when it is
// absent or unreadable (its own section says so).
func decode[T any](res checker.Results, name string) (T, bool) {
	var d T
	r, ok := res.Checkers[name]
	if !ok || r.Details == nil {
		return d, false
	}
	return d, r.DecodeDetails(&d) == nil
}

// runbook builds the section from the monitor's samples.
func runbook(in Page) runbookView {
	rv := runbookView{ID: anchor.Runbook, Note: in.MonitorNote}
	ss := in.Monitor
	if rv.Note == "" && len(ss) == 0 {
		rv.Note = "Not recorded: monitor.jsonl holds no sample."
	}
	for _, s := range ss {
		if s.Why == monitor.WhyNemesis {
			rv.Steps++
		} else {
			rv.Interval++
		}
		rv.Dropped += s.Dropped
		if sampleHasError(s) {
			rv.Errors++
		}
	}
	rv.Samples = len(ss)
	if len(ss) > 0 {
		rv.Span = fmt.Sprintf("%s to %s", checker.Seconds(ss[0].TimeNS), checker.Seconds(ss[len(ss)-1].TimeNS))
	}
	book := sessionsOf(in.History)
	vs := violationTimes(in)
	for i, v := range vs {
		if i == maxSnapshots {
			rv.Omitted = len(vs) - maxSnapshots
			break
		}
		rv.Snapshots = append(rv.Snapshots, snapshot(v, ss, book, in.MonitorNote))
	}
	return rv
}

func sampleHasError(s monitor.Sample) bool {
	for _, d := range s.Dirs {
		if d.Error != "" {
			return true
		}
	}
	for _, sv := range s.Servers {
		if sv.MntrError != "" || sv.ConsError != "" {
			return true
		}
	}
	return false
}

// snapshot is violation v's view of the last sample before it.
func snapshot(v violationAt, ss []monitor.Sample, book sessionBook, note string) snapshotView {
	sv := snapshotView{ID: anchor.Snapshot(v.checker, v.index), Checker: v.checker, Index: v.index, What: v.what}
	if v.known {
		sv.At = checker.Seconds(v.t)
	}
	i := -1
	if v.known {
		i = monitor.NearestBefore(ss, v.t)
	}
	switch {
	case len(ss) == 0:
		sv.None = strings.TrimPrefix(note, "Not recorded: ")
		if sv.None == "" {
			sv.None = "the monitor took no sample"
		}
		return sv
	case !v.known:
		sv.None = "the violation's time is not known (the run's start wall clock or the entry's is missing)"
		return sv
	case i < 0:
		sv.None = "the monitor's first sample was taken after it"
		return sv
	}
	s := ss[i]
	sv.Seq, sv.Why, sv.Taken = s.Seq, s.Why, checker.Seconds(s.TimeNS)
	if s.Step != "" {
		sv.Why += ": " + s.Step
	}
	sv.Before = checker.Seconds(v.t - s.TimeNS)
	sv.ZkCli = zkCliView(s, v.key, book) + processesView(s, v, book)
	for _, srv := range s.Servers {
		sv.Servers = append(sv.Servers, serverRow(srv, s.Session))
	}
	return sv
}

// zkCliView writes the sample's lock directory of key (every directory
// when none is named after it) as ls and stat show it, one node a line,
// sorted by sequence number: the first one holds the lock.
func zkCliView(s monitor.Sample, key string, book sessionBook) string {
	var b strings.Builder
	dirs := s.Dirs
	for _, d := range s.Dirs {
		if path.Base(d.Path) == key {
			dirs = []monitor.Dir{d}
			break
		}
	}
	for _, d := range dirs {
		fmt.Fprintf(&b, "[zk] ls %s\n", d.Path)
		if d.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n\n", d.Error)
			continue
		}
		fmt.Fprintf(&b, "  %d children (stat: cversion = %d, numChildren = %d)\n", len(d.Children), d.Cversion, d.NumChildren)
		for j, c := range d.Children {
			fmt.Fprintf(&b, "  %s\n      %s\n", c.Name, childLine(s, c, j == 0, book))
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// childLine is what stat and cons tell of a child: its owner, whether
// the servers still list that session, and whose it is by the history.
func childLine(s monitor.Sample, c monitor.Child, first bool, book sessionBook) string {
	var parts []string
	if first {
		parts = append(parts, "first: holds the lock")
	}
	switch {
	case c.Gone:
		return strings.Join(append(parts, "deleted between ls and stat"), "; ")
	case c.Error != "":
		return strings.Join(append(parts, c.Error), "; ")
	case c.Owner == "":
		return strings.Join(append(parts, "persistent (ephemeralOwner = 0x0)"), "; ")
	}
	parts = append(parts, "ephemeralOwner = "+c.Owner, liveness(s, c.Owner))
	if p, ok := book.owner[c.Owner]; ok {
		parts = append(parts, fmt.Sprintf("process %d by the history", p))
	}
	return strings.Join(parts, "; ")
}

// liveness says what the sample's cons answers show of a session.
func liveness(s monitor.Sample, session string) string {
	listing, silent := s.Liveness(session)
	switch {
	case len(listing) > 0:
		return "session connected to " + servers(listing)
	case len(silent) == len(s.Servers):
		return "session: no server answered cons"
	}
	l := "session listed by no server that answered cons (expired, or its client disconnected)"
	if len(silent) > 0 {
		l += "; " + servers(silent) + " gave no list"
	}
	return l
}

// processesView is the runbook's comparison for two instances that both
// think they lead (docs/background.md#what-the-runbook-asks): for each
// process the
// violation names, its sessions by the history (those reported before the
// violation), whether one of them owns a node in the sample, and what
// cons showed of each.
func processesView(s monitor.Sample, v violationAt, book sessionBook) string {
	if len(v.procs) == 0 {
		return ""
	}
	owned := map[string]string{}
	for _, d := range s.Dirs {
		for _, c := range d.Children {
			if c.Owner != "" {
				owned[c.Owner] = d.Path + "/" + c.Name
			}
		}
	}
	var b strings.Builder
	b.WriteString("\n\nprocesses of the violation, their sessions by the history:")
	for _, p := range v.procs {
		fmt.Fprintf(&b, "\n  process %d:", p)
		seen := 0
		for _, ss := range book.byProc[history.Process(p)] {
			if ss.at > v.t {
				break
			}
			seen++
			node := "owns no lock node"
			if n, ok := owned[ss.id]; ok {
				node = "owns " + n
			}
			fmt.Fprintf(&b, "\n      session %s: %s; %s", ss.id, node, liveness(s, ss.id))
		}
		if seen == 0 {
			b.WriteString(" no session reported before the violation")
		}
	}
	return b.String()
}

func servers(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprintf("n%d", id)
	}
	return strings.Join(s, ", ")
}

// serverRow is one server's row; own is the monitor's session, left out
// of the sessions cons listed.
func serverRow(s monitor.Server, own string) serverView {
	v := serverView{Name: fmt.Sprintf("n%d (%s)", s.ID, s.Addr), MntrError: s.MntrError, ConsError: s.ConsError}
	if m := s.Mntr; m != nil {
		v.State = m.State
		v.Latency = fmt.Sprintf("%d / %.1f / %d", m.MinLatency, m.AvgLatency, m.MaxLatency)
		v.Outstanding, v.Znodes, v.Watches, v.Ephemerals = m.Outstanding, m.Znodes, m.Watches, m.Ephemerals
		v.Connections, v.Sessions = m.Connections, m.Sessions
	}
	var listed []string
	for _, sid := range s.Sessions {
		if sid != own {
			listed = append(listed, sid)
		}
	}
	v.Listed = fmt.Sprintf("%d", len(listed))
	if len(listed) > 0 {
		v.Listed += ": " + strings.Join(listed, ", ")
	}
	if own != "" && s.Lists(own) {
		v.Listed += " (and the monitor's own)"
	}
	return v
}

// sessionBook is who owns which session, by the history: the session ids
// the workers reported (acquire and campaign answers, session events).
type sessionBook struct {
	owner map[string]history.Process
	// byProc lists each process's sessions in the order first reported.
	byProc map[history.Process][]seenSession
}

type seenSession struct {
	id string
	at int64 // first reported (run clock)
}

func sessionsOf(h []history.Event) sessionBook {
	b := sessionBook{owner: map[string]history.Process{}, byProc: map[history.Process][]seenSession{}}
	for _, e := range h {
		if e.Process == history.Nemesis || e.Type == history.Invoke || e.Value == nil || e.Value.Session == "" {
			continue
		}
		if _, ok := b.owner[e.Value.Session]; ok {
			continue
		}
		b.owner[e.Value.Session] = e.Process
		b.byProc[e.Process] = append(b.byProc[e.Process], seenSession{e.Value.Session, e.Time})
	}
	return b
}
