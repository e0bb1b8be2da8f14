package lock

import (
	"testing"

	"github.com/zkchaos/zkchaos/history"
)

// Processes outside the slice's range (negative, huge) are numbered by the
// map, each once, and numbers stay dense in the order of first sight.
func TestProcIDsNumberEveryProcessOnce(t *testing.T) {
	ps := newProcIDs()
	procs := []history.Process{3, -7, 1 << 40, 0, 3, smallProcesses, -7, 1 << 40, smallProcesses - 1}
	want := []int32{0, 1, 2, 3, 0, 4, 1, 2, 5}
	for i, p := range procs {
		if got := ps.id(p); got != want[i] {
			t.Fatalf("id(%d) = %d, want %d", p, got, want[i])
		}
	}
	for i, p := range ps.list {
		if ps.lookup(p) != int32(i) {
			t.Fatalf("lookup(%d) = %d, want %d", p, ps.lookup(p), i)
		}
	}
	for _, p := range []history.Process{5, -1, 1 << 41, smallProcesses + 1} {
		if ps.lookup(p) != -1 {
			t.Fatalf("lookup(%d) = %d for a process never seen", p, ps.lookup(p))
		}
	}
}
