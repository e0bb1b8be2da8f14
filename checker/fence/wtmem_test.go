package fence

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/resource/register"
)

// TestWrongTokenStreamForgetsRetiredHolders replays a soak-like history
// whose retired holders never release: the grants the stream keeps (the
// keys' lists and the holds) must stay within what it kept in the first
// quarter, and so must the processes whose session events it keeps; the
// answer must be the batch's.
func TestWrongTokenStreamForgetsRetiredHolders(t *testing.T) {
	h := checktest.SoakLike(8000)
	in := checker.Input{History: h, Fencing: register.ModeOn}
	s := NewWrongTokenStream(in.Limit(), in.Fencing, false)
	s.ForgetRetired()
	kept := func() int {
		n := len(s.holds) + len(s.openW) + s.obs.Index.Procs()
		for _, g := range s.grants {
			n += len(g.list)
		}
		return n
	}
	p := lockview.NewPairer()
	early, late := 0, 0
	for i, e := range h {
		it := p.Add(e)
		s.Add(&it)
		if i < len(h)/4 {
			early = max(early, kept())
		} else {
			late = max(late, kept())
		}
	}
	if late > early {
		t.Errorf("the stream kept up to %d grants after the first quarter, %d in it: it grows with the run", late, early)
	}
	s.Finish()
	got, _ := json.Marshal(s.Result())
	want, _ := json.Marshal(CheckWrongToken(context.Background(), in).Details)
	if string(got) != string(want) {
		t.Errorf("stream %s\nbatch  %s", got, want)
	}
}
