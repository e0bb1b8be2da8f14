package lock

import (
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// procIDs numbers processes densely, so that a replay keeps its state in
// slices indexed by number rather than in maps hashed per event.
type procIDs struct {
	small []int32 // number + 1 of the small non-negative processes (0: none yet)
	ids   map[history.Process]int32
	list  []history.Process // by number
}

const smallProcesses = 1 << 16

func newProcIDs() *procIDs { return &procIDs{ids: map[history.Process]int32{}} }

// id is p's number, given at its first sight.
func (ps *procIDs) id(p history.Process) int32 {
	if p >= 0 && int(p) < len(ps.small) && ps.small[p] > 0 {
		return ps.small[p] - 1
	}
	if i, ok := ps.ids[p]; ok {
		return i
	}
	i := int32(len(ps.list))
	if p >= 0 && p < smallProcesses {
		if int(p) >= len(ps.small) {
			ps.small = append(ps.small, make([]int32, int(p)+1-len(ps.small))...)
		}
		ps.small[p] = i + 1
	} else {
		ps.ids[p] = i
	}
	ps.list = append(ps.list, p)
	return i
}

// lookup is p's number, or -1 when it was never seen.
func (ps *procIDs) lookup(p history.Process) int32 {
	if p >= 0 && p < smallProcesses {
		if int(p) < len(ps.small) {
			return ps.small[p] - 1
		}
		return -1
	}
	if i, ok := ps.ids[p]; ok {
		return i
	}
	return -1
}

// opIndex groups a view's operations by key without copying them whole
// (an Op is over 100 bytes; copying and growing per-key copies was most
// of a check's time): per key, a record of each operation's, made by the
// checker (what it reads, or a pointer), and the processes numbered.
type opIndex[T any] struct {
	byKey map[string][]T
	procs *procIDs
}

// indexOps indexes the operations keep accepts, in the view's order,
// as rec makes them (given the operation's process number). Each key gets
// a number at its first sight; consecutive operations often share their
// key, so it is looked up only when the key changes, and the lists are
// gathered by number, not by name.
func indexOps[T any](ops []lockview.Op, keep func(*lockview.Op) bool, rec func(*lockview.Op, int32) T) opIndex[T] {
	ix := opIndex[T]{byKey: map[string][]T{}, procs: newProcIDs()}
	slot := map[string]int{}
	var names []string
	var lists [][]T
	last, cur := "", -1
	for i := range ops {
		o := &ops[i]
		if !keep(o) {
			continue
		}
		if cur < 0 || o.Key != last {
			n, ok := slot[o.Key]
			if !ok {
				n = len(names)
				slot[o.Key] = n
				names, lists = append(names, o.Key), append(lists, nil)
			}
			last, cur = o.Key, n
		}
		lists[cur] = append(lists[cur], rec(o, ix.procs.id(o.Process)))
	}
	for n, k := range names {
		ix.byKey[k] = lists[n]
	}
	return ix
}
