package lock

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/checker/stream"
	"github.com/zkchaos/zkchaos/history"
)

// OverlapStream is the grant-overlap rules fed the history one paired
// event at a time (lockview.Pairer); CheckGrantOverlap is the stream fed
// the whole history. A grant released ok is judged once the history's
// clock has passed the release's invocation (everything its window needs
// is in: the grants of the key, the holder's losses, its session). A
// false release is then final. An overlap may still be excused by a
// session-gone observation that comes later (last seen alive before the
// intruder's grant): it is reported once no fault that started before the
// intruder's grant is still in effect (lockview.Quiet), and at Finish in
// any case.
//
// Memory: per key, the grants since the oldest grant still held (a
// holder that never releases keeps them all, unless ForgetRetired); per
// process, its session,
// lost and session-gone events (a few per connection or fault), its
// first limit false releases, and every overlap found: the rule lets an
// observation made at any later time excuse one, so none can be
// forgotten (it grows with the violations, not with the grants). In
// deferred mode (a history whose clock goes back) the grants are judged
// at Finish.
type OverlapStream struct {
	limit    int
	deferred bool
	retire   bool // ForgetRetired
	obs      *lockview.Observations
	now      int64
	grants   map[string]*keyGrants
	held     map[heldKey]*heldGrant
	procs    map[history.Process]*procFindings
	due      []*heldGrant // released ok, waiting for the clock to pass the release's invocation
	waiting  []*candidate // overlaps an observation could still excuse
	overlaps int          // not excused, listed or not
	d        GrantOverlapDetails
}

type heldKey struct {
	p   history.Process
	key string
}

// heldGrant is a process's grant of a key and the operation that ends it
// (its next acquire or release of the key).
type heldGrant struct {
	a, end *lockview.Op
	rank   int64 // a's invocation: the batch lists a process's findings in this order
}

type keyGrant struct {
	op   *lockview.Op
	rank int64
}

// keyGrants are a key's grants by answer time (ties by invocation), and
// the answer times of the grants still held.
type keyGrants struct {
	list    []keyGrant
	kept    int
	holders map[history.Process]int64
}

type procFindings struct {
	overlaps []*candidate     // in judgment order
	falseRel []rankedFalseRel // the first limit by grant
	// judged are the grants with overlaps not excused, for the
	// observations to come.
	judged []*judgedGrant
}

type judgedGrant struct {
	aDone   int64
	session lockview.Session
	cands   []*candidate
}

// candidate is an overlap that an observation still to come may excuse
// (the rule accepts one made at any time after the grant); reported says
// the stream has returned it from Add.
type candidate struct {
	ov       Overlap
	rank     int64 // the holder's grant's
	excused  bool
	reported bool
}

var _ stream.Checker[*lockview.Item, stream.Found] = (*OverlapStream)(nil)

// NewOverlapStream keeps the first limit findings of each kind as
// evidence; deferred judges only at Finish.
func NewOverlapStream(limit int, deferred bool) *OverlapStream {
	return &OverlapStream{limit: limit, deferred: deferred, obs: lockview.NewObservations(), grants: map[string]*keyGrants{},
		held: map[heldKey]*heldGrant{}, procs: map[history.Process]*procFindings{},
		d: GrantOverlapDetails{Overlaps: []Overlap{}, FalseReleases: []FalseRelease{}, Excused: map[string]int{}}}
}

// ForgetRetired lets the stream take a process whose operation completed
// info as retired: it invokes nothing more (a run's runner retires it and
// a fresh process id takes its slot, docs/architecture.md "`client/`";
// only a hand-made history breaks that, so the batch does not assume it).
// A grant is judged only when its holder's release of the key is invoked
// and answered ok; a retired holder invokes no release, so its grants
// held at retirement can never be judged, and they stop pinning the key's
// grant list (without this a holder retired with an open grant keeps every
// later grant of its key for the rest of a soak). Nothing else reads a
// held grant: a grant judged later is compared with the grants answered
// after its own, which its own hold keeps in the list until it is judged,
// never with who else holds what, so no result changes. A grant its holder released ok before retiring stays
// held (and pins) until the clock judges it, as before. Once a retired
// process has no grant left to judge, the index forgets its session
// events and the stream its empty findings: only the holder's own events
// are read to judge a grant.
func (s *OverlapStream) ForgetRetired() { s.retire = true }

// Name implements stream.Checker.
func (s *OverlapStream) Name() string { return NameGrantOverlap }

// Add implements stream.Checker: the false releases and overlaps that are
// certain once this event is in.
func (s *OverlapStream) Add(it *lockview.Item) []stream.Found {
	var found []stream.Found
	t := it.Event.Time
	if t < s.now {
		s.deferred = true // a clock that goes back: answers wait for Finish
	}
	if t > s.now {
		s.now = t
		if !s.deferred {
			found = s.judgeDue(t)
		}
	}
	switch {
	case s.obs.Observe(it):
		if it.Kind == lockview.ItemGone {
			s.excuse(it.Gone)
		}
	case it.Kind == lockview.ItemInvoke:
		s.invoked(it.Op)
	case it.Kind == lockview.ItemDone:
		s.done(it)
		if s.retire && it.Op.Type == history.Info {
			s.retired(it.Op.Process)
		}
	}
	if !s.deferred {
		found = append(found, s.settle(s.obs.Quiet.Since())...)
	}
	return found
}

// invoked ends the process's grant of the key, if it holds one, at its
// next acquire or release of it.
func (s *OverlapStream) invoked(o *lockview.Op) {
	if o.F != history.FAcquire && o.F != history.FRelease {
		return
	}
	k := heldKey{o.Process, o.Key}
	h := s.held[k]
	if h == nil || h.end != nil {
		return
	}
	if o.F == history.FAcquire {
		s.unhold(k)
		return
	}
	h.end = o
}

func (s *OverlapStream) unhold(k heldKey) {
	delete(s.held, k)
	delete(s.grants[k.key].holders, k.p)
}

// done reads a completed operation: a grant, or the release that ends one.
func (s *OverlapStream) done(it *lockview.Item) {
	o := it.Op
	k := heldKey{o.Process, o.Key}
	if h := s.held[k]; h != nil && h.end == o {
		if o.Type == history.OK {
			s.due = append(s.due, h) // held until judged
		} else {
			s.unhold(k)
		}
	}
	if o.F != history.FAcquire || o.Type != history.OK {
		return
	}
	s.d.Grants++
	kg := s.grants[o.Key]
	if kg == nil {
		kg = &keyGrants{holders: map[history.Process]int64{}}
		s.grants[o.Key] = kg
	}
	kg.add(keyGrant{o, it.Rank}, !s.deferred)
	s.held[k] = &heldGrant{a: o, rank: it.Rank}
	kg.holders[o.Process] = o.Done
}

// retired forgets the grants p holds: they can never be judged
// (ForgetRetired).
func (s *OverlapStream) retired(p history.Process) {
	for k, h := range s.held {
		if k.p == p && h.end == nil {
			s.unhold(k)
		}
	}
	s.obs.Retire(p)
	s.obs.ForgetRetired(s.busy, s.forgot)
}

// busy says whether p holds a grant the stream is still to judge; once it
// does not, a retired p's events are forgotten (ForgetRetired).
func (s *OverlapStream) busy(p history.Process) bool {
	for k := range s.held {
		if k.p == p {
			return true
		}
	}
	return false
}

// forgot drops a forgotten process's findings if it has none.
func (s *OverlapStream) forgot(p history.Process) {
	if pf := s.procs[p]; pf != nil && len(pf.overlaps)+len(pf.falseRel)+len(pf.judged) == 0 {
		delete(s.procs, p)
	}
}

// add files g by answer time and, when prune, forgets the grants no
// held grant can meet again (answered before every held grant's).
func (kg *keyGrants) add(g keyGrant, prune bool) {
	kg.list = append(kg.list, g)
	for i := len(kg.list) - 1; i > 0 && cmpGrant(kg.list[i-1], kg.list[i]) > 0; i-- {
		kg.list[i-1], kg.list[i] = kg.list[i], kg.list[i-1]
	}
	if !prune || len(kg.list) < 2*kg.kept+64 {
		return
	}
	oldest := int64(math.MaxInt64)
	for _, t := range kg.holders {
		oldest = min(oldest, t)
	}
	n := sort.Search(len(kg.list), func(i int) bool { return kg.list[i].op.Done > oldest })
	kg.list = append(kg.list[:0], kg.list[n:]...)
	kg.kept = len(kg.list)
}

func cmpGrant(a, b keyGrant) int {
	if a.op.Done != b.op.Done {
		return cmp.Compare(a.op.Done, b.op.Done)
	}
	return cmp.Compare(a.rank, b.rank)
}

// judgeDue judges the grants whose release was invoked before now.
func (s *OverlapStream) judgeDue(now int64) []stream.Found {
	var found []stream.Found
	n := 0
	for _, h := range s.due {
		if h.end.Invoke >= now {
			s.due[n] = h
			n++
			continue
		}
		found = append(found, s.judge(h)...)
	}
	judged := n < len(s.due)
	clear(s.due[n:])
	s.due = s.due[:n]
	if judged && s.obs.Retiring() {
		s.obs.ForgetRetired(s.busy, s.forgot)
	}
	return found
}

// judge checks one grant released ok against the key's other grants and
// the holder's session (judgeGrant), and files what it found.
func (s *OverlapStream) judge(h *heldGrant) []stream.Found {
	a := h.a
	s.unhold(heldKey{a.Process, a.Key})
	j := judgeGrant(s.obs.Index, *a, *h.end, s.grants[a.Key].list)
	if j.lost > 0 {
		s.d.Excused[ExcusedReportedLoss] += j.lost
	}
	if j.gone > 0 {
		s.d.Excused[ExcusedSessionGone] += j.gone
	}
	pf := s.proc(a.Process)
	var found []stream.Found
	if j.falseRel != nil {
		s.d.FalseReleaseCount++
		pf.keepFalseRel(rankedFalseRel{h.rank, *j.falseRel}, s.limit)
		found = append(found, stream.Found{Key: a.Key, TimeNS: j.falseRel.ReleaseNS, Message: j.falseRel.Message})
	}
	if len(j.overlaps) == 0 {
		return found
	}
	jg := &judgedGrant{aDone: a.Done, session: j.session.Clone()}
	for _, ov := range j.overlaps {
		c := &candidate{ov: ov, rank: h.rank}
		jg.cands = append(jg.cands, c)
		pf.overlaps = append(pf.overlaps, c)
		s.waiting = append(s.waiting, c)
	}
	s.overlaps += len(j.overlaps)
	pf.judged = append(pf.judged, jg)
	return found
}

type rankedFalseRel struct {
	rank int64
	f    FalseRelease
}

// keepFalseRel files f among the process's first limit false releases by
// grant (a process holding two keys may release the later grant first).
func (pf *procFindings) keepFalseRel(f rankedFalseRel, limit int) {
	i := len(pf.falseRel)
	for i > 0 && pf.falseRel[i-1].rank > f.rank {
		i--
	}
	if i >= limit {
		return
	}
	pf.falseRel = slices.Insert(pf.falseRel, i, f)
	if len(pf.falseRel) > limit {
		pf.falseRel = pf.falseRel[:limit]
	}
}

func (s *OverlapStream) proc(p history.Process) *procFindings {
	pf := s.procs[p]
	if pf == nil {
		pf = &procFindings{}
		s.procs[p] = pf
	}
	return pf
}

// excuse applies a session-gone observation to the overlaps still
// waiting: it excuses those of its process's grants (granted before it
// was made, in a session it may be) whose intruder came after the
// session was last seen alive.
func (s *OverlapStream) excuse(g lockview.Gone) {
	pf := s.procs[g.Process]
	if pf == nil {
		return
	}
	n := 0
	for _, jg := range pf.judged {
		live := false
		for _, c := range jg.cands {
			if c.excused {
				continue
			}
			if g.Time >= jg.aDone && c.ov.GrantedNS > g.LastSeenNS && jg.session.May(g.Session) {
				c.excused = true
				s.overlaps--
				s.d.Excused[ExcusedSessionGone]++
				continue
			}
			live = true
		}
		if live {
			pf.judged[n] = jg
			n++
		}
	}
	clear(pf.judged[n:])
	pf.judged = pf.judged[:n]
}

// settle reports the overlaps that our nemesis can no longer excuse: no
// fault that started before the intruder's grant is still in effect
// (since: lockview.Quiet.Since). The result still follows the rule: an
// observation made later (by no fault of ours) excuses a reported one.
func (s *OverlapStream) settle(since int64) []stream.Found {
	var found []stream.Found
	n := 0
	for _, c := range s.waiting {
		switch {
		case c.excused:
		case c.ov.GrantedNS > since:
			s.waiting[n] = c
			n++
		default:
			c.reported = true
			found = append(found, stream.Found{Key: c.ov.Key, TimeNS: c.ov.GrantedNS, Message: c.ov.Message})
		}
	}
	clear(s.waiting[n:])
	s.waiting = s.waiting[:n]
	return found
}

// Finish judges what waits for the clock and reports every overlap still
// waiting: the history is over, no observation can come.
func (s *OverlapStream) Finish() []stream.Found {
	found := s.judgeDue(math.MaxInt64)
	return append(found, s.settle(math.MaxInt64)...)
}

// Result is the evidence so far, listed as the batch lists it: processes
// in order, each one's findings in the order of its grants, the first
// limit of each kind in all, then sorted by time.
func (s *OverlapStream) Result() GrantOverlapDetails {
	d := s.d
	d.Excused = maps.Clone(s.d.Excused)
	d.OverlapCount = s.overlaps
	d.Overlaps, d.FalseReleases = []Overlap{}, []FalseRelease{}
	for _, p := range slices.Sorted(maps.Keys(s.procs)) {
		pf := s.procs[p]
		slices.SortStableFunc(pf.overlaps, func(a, b *candidate) int { return cmp.Compare(a.rank, b.rank) })
		for _, c := range pf.overlaps {
			if !c.excused && len(d.Overlaps) < s.limit {
				d.Overlaps = append(d.Overlaps, c.ov)
			}
		}
		for _, f := range pf.falseRel {
			if len(d.FalseReleases) < s.limit {
				d.FalseReleases = append(d.FalseReleases, f.f)
			}
		}
	}
	d.OverlapsOmitted = d.OverlapCount - len(d.Overlaps)
	d.FalseReleasesOmitted = d.FalseReleaseCount - len(d.FalseReleases)
	sort.SliceStable(d.Overlaps, func(i, j int) bool { return d.Overlaps[i].GrantedNS < d.Overlaps[j].GrantedNS })
	sort.SliceStable(d.FalseReleases, func(i, j int) bool { return d.FalseReleases[i].ReleaseNS < d.FalseReleases[j].ReleaseNS })
	for _, o := range d.Overlaps {
		d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, o.GrantedNS)
	}
	for _, f := range d.FalseReleases {
		d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, f.ReleaseNS)
	}
	return d
}
