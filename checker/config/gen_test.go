package config

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
)

// sim is a correct config run, one operation at a time: a ZooKeeper node
// with versions, admins that read and compare-and-set (some answers lost,
// some landing anyway), and clients that apply the current version at
// random moments, possibly skipping versions, as a watch that re-reads
// does.
type sim struct {
	r       *rand.Rand
	b       checktest.Timeline
	t       int64 // ms
	version int64
	digests map[int64]string // the data of each version
	admins  map[int]int64    // live admin process -> version it read
	clients map[int]int64    // live client process -> version applied
	next    int
	n       int64
}

func newSim(seed uint64) *sim {
	s := &sim{r: rand.New(rand.NewPCG(seed, 0xc0f)), digests: map[int64]string{0: d0},
		admins: map[int]int64{}, clients: map[int]int64{}}
	for range 2 {
		s.admins[s.fresh()] = -1
	}
	for range 3 {
		s.watch()
	}
	return s
}

func (s *sim) fresh() int          { s.next++; return s.next - 1 }
func (s *sim) tick() int64         { s.t += 1 + s.r.Int64N(5); return s.t }
func (s *sim) cur() *history.Value { return checktest.ConfigV(s.version, s.digests[s.version]) }

// watch starts a client; now and then its first watch times out and the
// successor process starts again.
func (s *sim) watch() {
	p := s.fresh()
	if s.r.IntN(5) == 0 {
		s.b.Add(s.tick(), p, history.Invoke, history.FWatch, key, nil, "")
		s.b.Add(s.tick(), p, history.Info, history.FWatch, key, nil, "timeout")
		p = s.fresh()
	}
	s.b.Add(s.tick(), p, history.Invoke, history.FWatch, key, nil, "")
	s.b.Add(s.tick(), p, history.OK, history.FWatch, key, s.cur(), "")
	s.clients[p] = s.version
}

func (s *sim) read(p int) {
	s.b.Add(s.tick(), p, history.Invoke, history.FReadConfig, key, nil, "")
	s.b.Add(s.tick(), p, history.OK, history.FReadConfig, key, s.cur(), "")
	s.admins[p] = s.version
}

// update is admin p's compare-and-set; lost answers retire p.
func (s *sim) update(p int, lost bool) {
	s.n++
	exp := s.admins[p]
	s.b.Add(s.tick(), p, history.Invoke, history.FUpdate, key, &history.Value{N: history.Int64(s.n), Expected: history.Int64(exp)}, "")
	lands := exp == s.version && (!lost || s.r.IntN(2) == 0)
	if lands {
		s.version++
		s.digests[s.version] = dig(s.n)
	}
	switch {
	case lost:
		s.b.Add(s.tick(), p, history.Info, history.FUpdate, key, nil, "timeout")
		delete(s.admins, p)
		s.admins[s.fresh()] = -1
	case lands:
		s.b.Add(s.tick(), p, history.OK, history.FUpdate, key, s.cur(), "")
		s.admins[p] = s.version
	default:
		s.b.Add(s.tick(), p, history.Fail, history.FUpdate, key, nil, "bad version")
	}
}

func (s *sim) apply(p int) {
	v := checktest.ConfigV(s.version, s.digests[s.version])
	at := s.tick()
	s.b.Add(at, p, history.Invoke, history.FApplied, key, v, "")
	s.b.Add(at, p, history.OK, history.FApplied, key, v, "")
	s.clients[p] = s.version
}

func (s *sim) step() {
	switch k := s.r.IntN(10); {
	case k < 3:
		s.read(pick(s.r, s.admins))
	case k < 6:
		s.update(pick(s.r, s.admins), s.r.IntN(6) == 0)
	case k < 9:
		s.apply(pick(s.r, s.clients))
	default:
		s.watch()
	}
}

// finish writes the final version and lets every client apply it.
func (s *sim) finish() []history.Event {
	p := pick(s.r, s.admins)
	s.read(p)
	s.update(p, false)
	for _, c := range slices.Sorted(maps.Keys(s.clients)) {
		s.apply(c)
	}
	s.read(p)
	s.t += 4000 // past the bound
	s.read(p)
	return s.b.Events
}

// pick is a random process of m, the same for the same seed.
func pick(r *rand.Rand, m map[int]int64) int {
	ps := slices.Sorted(maps.Keys(m))
	return ps[r.IntN(len(ps))]
}

func TestRandomCleanHistories(t *testing.T) {
	for seed := range uint64(200) {
		s := newSim(seed)
		for range 20 + s.r.IntN(200) {
			s.step()
		}
		h := s.finish()
		// The simulated history is well formed (and an applied event pairs
		// on its own, as an instant event), or it would prove nothing.
		if r := integrity.Check(context.Background(), checker.Input{History: h}); r.Valid != checker.Valid {
			t.Fatalf("seed %d: integrity: %s", seed, r.Error)
		}
		for _, c := range All() {
			r := c.Check(context.Background(), checker.Input{History: h, SessionTimeout: time.Second})
			if r.Valid != checker.Valid {
				t.Fatalf("seed %d: %s: %v: %s", seed, c.Name, r.Valid, r.Error)
			}
		}
	}
}

// TestRandomBlindWrite breaks one simulated history: an admin that
// writes without the expected version is caught by config-cas.
func TestRandomBlindWrite(t *testing.T) {
	s := newSim(1)
	for range 50 {
		s.step()
	}
	for s.version == 0 {
		s.step()
	}
	p := pick(s.r, s.admins)
	s.admins[p] = s.version - 1 // it read an older version, but writes blind
	s.n++
	s.b.Add(s.tick(), p, history.Invoke, history.FUpdate, key, &history.Value{N: history.Int64(s.n), Expected: history.Int64(s.admins[p])}, "")
	s.version++
	s.digests[s.version] = dig(s.n)
	s.b.Add(s.tick(), p, history.OK, history.FUpdate, key, s.cur(), "")
	h := s.finish()
	if r := CheckCAS(context.Background(), checker.Input{History: h}); r.Valid != checker.Invalid {
		t.Fatalf("blind write not caught: %v", r.Valid)
	}
}
