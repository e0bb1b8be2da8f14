package nemesis

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func ids(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// TestRingShape checks the majorities ring's promise for every ensemble
// size that can have one: each node sees a majority, no two the same.
func TestRingShape(t *testing.T) {
	for n := 3; n <= 9; n++ {
		for seed := uint64(0); seed < 20; seed++ {
			all := ids(n)
			g := ring(all, rand.New(rand.NewPCG(seed, 1)))
			if g.empty() {
				t.Fatalf("n=%d: ring cuts nothing", n)
			}
			var views [][]int
			for _, a := range all {
				v := g.sees(all, a)
				if len(v) < majority(n) {
					t.Errorf("n=%d seed %d: n%d sees %v, not a majority (%s)", n, seed, a, v, g)
				}
				for _, w := range views {
					if slices.Equal(v, w) {
						t.Errorf("n=%d seed %d: two nodes see %v (%s)", n, seed, v, g)
					}
				}
				views = append(views, v)
			}
		}
	}
}

func TestHalvesBridgeAndLeader(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for n := 3; n <= 7; n++ {
		all := ids(n)
		h := halves(all, r)
		if got, want := len(h.pairs()), (n/2)*(n-n/2); got != want {
			t.Errorf("halves n=%d: %d pairs cut, want %d (%s)", n, got, want, h)
		}
		b := bridge(all, r)
		full := 0
		for _, a := range all {
			if len(b.sees(all, a)) == n {
				full++
			}
			if len(b.sees(all, a)) < n/2 {
				t.Errorf("bridge n=%d: n%d sees too little (%s)", n, a, b)
			}
		}
		if full != 1 {
			t.Errorf("bridge n=%d: %d nodes see everyone, want the one bridge (%s)", n, full, b)
		}
		l := isolateOne(all, 2)
		if len(l.sees(all, 2)) != 1 || len(l.sees(all, 1)) != n-1 {
			t.Errorf("isolate n2 of %d: %s", n, l)
		}
	}
	if !halves(ids(1), r).empty() || !bridge(ids(2), r).empty() {
		t.Errorf("a grudge on one or two nodes must be empty")
	}
}

// TestSameSeedSameGrudge is what makes a schedule repeatable.
func TestSameSeedSameGrudge(t *testing.T) {
	a := halves(ids(5), rand.New(rand.NewPCG(3, 3)))
	b := halves(ids(5), rand.New(rand.NewPCG(3, 3)))
	if a.String() != b.String() {
		t.Errorf("same seed, different grudges: %s vs %s", a, b)
	}
}
