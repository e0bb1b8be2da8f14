package checktest

import (
	"fmt"

	"github.com/zkchaos/zkchaos/history"
)

// SoakLike is a long fenced run of the shape a soak with faults records,
// rounds critical sections over three keys: now and then a holder is
// retired with its grant still open (its write answered info, as a paused
// holder's is) or an acquire is answered info, and a fresh process takes
// its slot (a new id, a new session); the nemesis pauses and resumes a
// worker now and then. A stream's memory must not grow with rounds on it:
// the retired holders never release.
func SoakLike(rounds int) []history.Event {
	b := &Hist{}
	keys := []string{"K0", "L1", "M2"}
	slots := []int{0, 1, 2, 3}
	next := len(slots)
	connect := func(p int) {
		b.Instant(p, history.FSession, "", &history.Value{Session: fmt.Sprintf("0x%x", 0x100+p), State: "connected"})
	}
	for _, p := range slots {
		connect(p)
	}
	tok, n := int64(0), map[string]int64{}
	prev := map[string]int64{}
	for r := range rounds {
		s := r % len(slots)
		p, key := slots[s], keys[r%len(keys)]
		if r%40 == 0 {
			b.Instant(-1, history.FPause, "", &history.Value{Target: fmt.Sprintf("process %d", p)})
		}
		if r%40 == 20 {
			b.Instant(-1, history.FResume, "", nil)
		}
		tok++
		switch {
		case r%50 == 7: // retired holding key
			b.Acquire(p, key, tok).WriteInv(p, key, n[key]+1).Info(p, history.FWrite, key)
		case r%70 == 11: // retired on an acquire whose outcome is unknown
			b.Inv(p, history.FAcquire, key).Info(p, history.FAcquire, key)
		default:
			b.Section(p, key, tok, n[key], max(prev[key], -1))
			n[key]++
			prev[key] = tok
			continue
		}
		slots[s] = next
		next++
		connect(slots[s])
	}
	return b.Events
}
