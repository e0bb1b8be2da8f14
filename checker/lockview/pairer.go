package lockview

import (
	"context"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
)

// Kinds of Item.
const (
	ItemNone    = iota // nothing the lock checkers read (an unmatched completion)
	ItemInvoke         // a worker operation was invoked: Op is open (Type "")
	ItemDone           // a worker operation completed: Op is complete
	ItemInstant        // a worker's instant event (session, lost, late)
	ItemGone           // the nemesis saw a worker's session gone
	ItemNemesis        // another nemesis event (a fault's step)
)

// Item is what one history event tells the lock checkers, paired as Of
// pairs: the streaming checkers read the history as these, one event at
// a time, so that they and the batch checkers (the streams fed the whole
// history) pair it the same way. A stream gets a pointer valid only
// during its Add (the feeder reuses one Item); Op it may keep.
type Item struct {
	Kind int
	// Op is the operation invoked or completed; the same pointer for both,
	// so a checker may keep it at the invocation and read it completed.
	Op      *Op
	Instant Instant
	Gone    Gone
	// Event is the history event itself.
	Event history.Event
	// Rank orders operations by invocation (0, 1, 2, ...), the order of
	// View.Ops: checkers break ties of time with it.
	Rank int64
}

// Pairer pairs a history's events one at a time, in file order, as Of
// does. Memory: one open operation per process.
type Pairer struct {
	open map[history.Process]openOp
	rank int64
	// slab is where the next operations are made: one allocation for
	// opSlab of them (allocating each was most of a batch check's time),
	// small enough that an operation a stream keeps holds little else.
	slab []Op
}

const opSlab = 64

// openOp is an operation waiting for its completion, with its rank.
type openOp struct {
	op   *Op
	rank int64
}

// NewPairer starts pairing a history from its first event.
func NewPairer() *Pairer {
	return &Pairer{open: map[history.Process]openOp{}}
}

// Add pairs the next event.
func (p *Pairer) Add(e history.Event) Item {
	var it Item
	p.fill(&it, e)
	return it
}

// fill pairs the next event into it (Feed reuses one Item).
func (p *Pairer) fill(it *Item, e history.Event) {
	*it = Item{Event: e}
	switch {
	case e.Process == history.Nemesis:
		if g, ok := goneOf(e); ok {
			it.Kind, it.Gone = ItemGone, g
		} else {
			it.Kind = ItemNemesis
		}
	case checker.IsInstant(e.F):
		if e.Type == history.OK {
			it.Kind, it.Instant = ItemInstant, instantOf(e)
		}
	case e.Type == history.Invoke:
		// One still open stays open for ever, as in Of.
		if len(p.slab) == 0 {
			p.slab = make([]Op, opSlab)
		}
		o := &p.slab[0]
		p.slab = p.slab[1:]
		*o = opOf(e)
		p.open[e.Process] = openOp{o, p.rank}
		it.Kind, it.Op, it.Rank = ItemInvoke, o, p.rank
		p.rank++
	default:
		o, ok := p.open[e.Process]
		if !ok {
			return
		}
		delete(p.open, e.Process)
		complete(o.op, e)
		it.Kind, it.Op, it.Rank = ItemDone, o.op, o.rank
	}
}

// opOf is the open operation an invocation starts.
func opOf(e history.Event) Op {
	return Op{Process: e.Process, F: e.F, Key: e.Key, Invoke: e.Time, Value: e.Value, Invoked: e.Value, Index: e.Index}
}

// complete fills in an operation's completion.
func complete(op *Op, e history.Event) {
	op.Done, op.Type, op.Error, op.Index = e.Time, e.Type, e.Error, e.Index
	if e.Value != nil {
		op.Value = e.Value
	}
}

func instantOf(e history.Event) Instant {
	return Instant{Process: e.Process, F: e.F, Key: e.Key, Time: e.Time, Value: e.Value, Index: e.Index}
}

// Monotone says whether the history's times never go back in file order:
// the streaming checkers' early answers assume it (a run's recorder
// guarantees it; the batch checkers feed a history that breaks it to a
// stream that answers only at its end).
func Monotone(h []history.Event) bool {
	for i := 1; i < len(h); i++ {
		if h[i].Time < h[i-1].Time {
			return false
		}
	}
	return true
}

// Feed pairs h and hands each item to add (a stream's Add), checking ctx
// now and then: a batch checker is its stream fed the whole history.
func Feed[V any](ctx context.Context, h []history.Event, add func(*Item) []V) error {
	p := NewPairer()
	var it Item // one for all: a stream reads an item only during its Add
	for i, e := range h {
		if i&0xffff == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		p.fill(&it, e)
		add(&it)
	}
	return nil
}
