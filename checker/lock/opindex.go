package lock

import (
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// procIDs numbers processes densely, so that a replay keeps its state in
// slices indexed by number rather than in maps hashed per event.
type procIDs struct {
	ids  map[history.Process]int32
	list []history.Process // by number
}

func newProcIDs() *procIDs { return &procIDs{ids: map[history.Process]int32{}} }

// id is p's number, given at its first sight.
func (ps *procIDs) id(p history.Process) int32 {
	if i, ok := ps.ids[p]; ok {
		return i
	}
	i := int32(len(ps.list))
	ps.ids[p] = i
	ps.list = append(ps.list, p)
	return i
}

// lookup is p's number, or -1 when it was never seen.
func (ps *procIDs) lookup(p history.Process) int32 {
	if i, ok := ps.ids[p]; ok {
		return i
	}
	return -1
}

// opIndex groups a view's operations by key without copying them (an
// Op is over 100 bytes; copying and growing per-key copies was most of a
// check's time): positions in the view's Ops, and every operation's
// process number.
type opIndex struct {
	byKey map[string][]int
	pid   []int32 // by position in the view's Ops; -1 for one not kept
	procs *procIDs
}

// indexOps indexes the operations keep accepts, in the view's order.
// Consecutive operations often share their key: the last key's list is
// looked up again only when the key changes.
func indexOps(ops []lockview.Op, keep func(*lockview.Op) bool) opIndex {
	ix := opIndex{byKey: map[string][]int{}, pid: make([]int32, len(ops)), procs: newProcIDs()}
	var last string
	var cur []int
	have := false
	for i := range ops {
		o := &ops[i]
		if !keep(o) {
			ix.pid[i] = -1
			continue
		}
		ix.pid[i] = ix.procs.id(o.Process)
		if !have || o.Key != last {
			if have {
				ix.byKey[last] = cur
			}
			last, cur, have = o.Key, ix.byKey[o.Key], true
		}
		cur = append(cur, i)
	}
	if have {
		ix.byKey[last] = cur
	}
	return ix
}

// keyOps are one key's operations, in the view's order: positions in all
// and their processes' numbers.
type keyOps struct {
	all   []lockview.Op
	idx   []int
	pid   []int32
	procs *procIDs
}

func (ix opIndex) key(all []lockview.Op, k string) keyOps {
	idx := ix.byKey[k]
	pid := make([]int32, len(idx))
	for i, at := range idx {
		pid[i] = ix.pid[at]
	}
	return keyOps{all: all, idx: idx, pid: pid, procs: ix.procs}
}
