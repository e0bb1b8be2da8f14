package lockview

import "github.com/zkchaos/zkchaos/history"

// Observations are what a streaming lock checker reads besides the
// operations, fed in history order: the nemesis' faults (Quiet: when a
// finding can no longer be excused by a fault in effect) and the
// processes' session, lost and session-gone events (Index: a grant is
// judged by its holder's session). The grant-overlap and wrong-token
// streams share this one owner. A stream that knows when a retired process
// has nothing left to judge (Retire, ForgetRetired) drops its events, so
// a soak's index grows with the processes alive, not with all it retired.
type Observations struct {
	Index *Index
	Quiet Quiet
	// nInst and nGone rank the instants and the gone observations, as
	// the batch's View numbers them.
	nInst, nGone int
	retiring     map[history.Process]bool
}

// NewObservations is empty, for a stream's first event.
func NewObservations() *Observations {
	return &Observations{Index: NewIndex(), retiring: map[history.Process]bool{}}
}

// Observe takes it if it is an observation (a nemesis event, an instant,
// a session-gone observation) and says whether it was; a stream acts on a
// gone observation itself afterwards.
func (o *Observations) Observe(it *Item) bool {
	switch it.Kind {
	case ItemNemesis:
		o.Quiet.Add(it.Event)
	case ItemInstant:
		o.Index.AddInstant(it.Instant, o.nInst)
		o.nInst++
	case ItemGone:
		o.Index.AddGone(it.Gone, o.nGone)
		o.nGone++
	default:
		return false
	}
	return true
}

// Retire notes that p invokes nothing more; its events are kept until
// ForgetRetired finds it idle.
func (o *Observations) Retire(p history.Process) { o.retiring[p] = true }

// Retiring says whether a retired process's events are still kept.
func (o *Observations) Retiring() bool { return len(o.retiring) > 0 }

// ForgetRetired forgets the events of each retired process for which busy
// (the stream still has something of it to judge) is false, and tells
// forgot (if not nil), for the stream to drop what it keeps of it.
func (o *Observations) ForgetRetired(busy func(history.Process) bool, forgot func(history.Process)) {
	for p := range o.retiring {
		if busy(p) {
			continue
		}
		delete(o.retiring, p)
		o.Index.Forget(p)
		if forgot != nil {
			forgot(p)
		}
	}
}
