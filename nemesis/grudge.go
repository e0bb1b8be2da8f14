package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// A grudge says which pairs of servers cannot talk: cut[a] holds every b
// that a is cut from, and always b holds a too. Connectivity here is
// symmetric because a TCP connection with one direction dropped is as
// dead as one with both, so Jepsen's one-way INPUT drops would only make
// the shapes harder to read, not different in effect.
type grudge map[int][]int

func (g grudge) cut(a, b int) {
	if !slices.Contains(g[a], b) {
		g[a] = append(g[a], b)
		g[b] = append(g[b], a)
	}
}

// empty reports whether the grudge cuts nothing.
func (g grudge) empty() bool {
	for _, v := range g {
		if len(v) > 0 {
			return false
		}
	}
	return true
}

// sees is what node a still reaches, itself included.
func (g grudge) sees(ids []int, a int) []int {
	var out []int
	for _, b := range ids {
		if !slices.Contains(g[a], b) {
			out = append(out, b)
		}
	}
	return out
}

// pairs lists the cut pairs, lower id first, for the record.
func (g grudge) pairs() [][2]int {
	var out [][2]int
	for a, bs := range g {
		for _, b := range bs {
			if a < b {
				out = append(out, [2]int{a, b})
			}
		}
	}
	slices.SortFunc(out, func(x, y [2]int) int {
		if x[0] != y[0] {
			return x[0] - y[0]
		}
		return x[1] - y[1]
	})
	return out
}

func (g grudge) String() string {
	var s []string
	for _, p := range g.pairs() {
		s = append(s, fmt.Sprintf("n%d-n%d", p[0], p[1]))
	}
	return strings.Join(s, ", ")
}

func majority(n int) int { return n/2 + 1 }

// cutBetween cuts every pair across the two groups.
func cutBetween(g grudge, a, b []int) {
	for _, x := range a {
		for _, y := range b {
			g.cut(x, y)
		}
	}
}

// isolateOne cuts node x from everyone (partition-zk-leader with x the
// leader: Jepsen's partition of the primary).
func isolateOne(ids []int, x int) grudge {
	g := grudge{}
	var rest []int
	for _, id := range ids {
		if id != x {
			rest = append(rest, id)
		}
	}
	cutBetween(g, []int{x}, rest)
	return g
}

// shuffled returns a shuffled copy of ids from the run's source.
func shuffled(ids []int, r *rand.Rand) []int {
	out := slices.Clone(ids)
	slices.Sort(out)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// halves is Jepsen's random halves: shuffle and bisect, the smaller half
// first, every pair across cut.
func halves(ids []int, r *rand.Rand) grudge {
	s := shuffled(ids, r)
	g := grudge{}
	cutBetween(g, s[:len(s)/2], s[len(s)/2:])
	return g
}

// bridge is Jepsen's bridge: shuffle and bisect, and the first node of the
// larger half stays connected to both halves; all other pairs across are
// cut. Each half plus the bridge can see a majority.
func bridge(ids []int, r *rand.Rand) grudge {
	s := shuffled(ids, r)
	g := grudge{}
	a, b := s[:len(s)/2], s[len(s)/2:]
	if len(b) > 1 {
		cutBetween(g, a, b[1:])
	}
	return g
}

// ring is Jepsen's majorities ring: the nodes on a shuffled ring, each
// connected to its neighbours out to distance d, the smallest at which it
// sees a majority; every other pair is cut. Every node sees a majority and
// no two see the same one. With three nodes every pair is within distance
// one, so the ring is whole; there the only such grudge is a path (one
// pair cut: the ends see a different two nodes each, the middle all
// three), which is what it gives.
func ring(ids []int, r *rand.Rand) grudge {
	s := shuffled(ids, r)
	n := len(s)
	g := grudge{}
	if n < 3 {
		return g
	}
	d := majority(n) / 2
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if dist := min(j-i, n-(j-i)); dist > d {
				g.cut(s[i], s[j])
			}
		}
	}
	if g.empty() {
		g.cut(s[0], s[1])
	}
	return g
}
