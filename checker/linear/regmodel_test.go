package linear

import (
	"fmt"
	"testing"

	"github.com/zkchaos/zkchaos/resource/register"
)

// TestModelAgreesWithRegister ties the register model to the register:
// over every mode, operation, token (none, below, at and above the fence
// and the last write's token) and state, the model allows an ok exactly
// where register.Decide accepts (and, for a write, the lock's promises
// hold, which is the model's own addition), a rejection exactly where it rejects, and
// an accepted operation leaves the state the register's own replay of the
// apply log leaves (the fence only where the model tracks it: not in mode
// off, where nothing reads it).
func TestModelAgreesWithRegister(t *testing.T) {
	type state struct{ value, token, fence int64 }
	states := []state{{0, register.NoToken, register.NoToken}, {4, 10, 10}, {4, 10, 12}}
	tokens := []int64{register.NoToken, 9, 10, 11, 12, 13}
	checked, rejected := 0, 0
	for _, mode := range []string{register.ModeOff, register.ModeOn, register.ModeStrict} {
		m := regModel{mode: mode}
		for _, st := range states {
			for _, op := range []string{register.OpRead, register.OpWrite} {
				for _, tok := range tokens {
					name := fmt.Sprintf("%s %s t%d on %+v", mode, op, tok, st)
					ks := register.KeyState{Value: st.value, Token: st.token, Fence: st.fence}
					acc, _ := register.Decide(mode, op, ks, tok != register.NoToken, tok)
					s := regState{Value: st.value, Token: st.token, Fence: st.fence}
					in := regIn{Write: op == register.OpWrite, N: st.value + 1, Token: tok}
					// An accepted write must also keep the lock's promises,
					// which are the model's, not the register's.
					promised := !in.Write || m.promises(s, in)
					ok, next := m.step(s, in, regOut{Status: stOK, N: st.value})
					if ok != (acc && promised) {
						t.Errorf("%s: register accepts %v (promises kept %v), model allows ok %v", name, acc, promised, ok)
					}
					if tok != register.NoToken {
						if rej, _ := m.step(s, in, regOut{Status: stRejected}); rej == acc {
							t.Errorf("%s: register accepts %v, model allows a rejection %v", name, acc, rej)
						}
					}
					checked++
					if !acc {
						rejected++
						continue
					}
					if !promised {
						continue
					}
					want := replayed(t, mode, st.value, st.token, st.fence, op, tok, in.N)
					if next.Value != want.Value || next.Token != want.Token || (mode != register.ModeOff && next.Fence != want.Fence) {
						t.Errorf("%s: model state %+v, register replays %+v", name, next, want)
					}
				}
			}
		}
	}
	if rejected == 0 || rejected == checked {
		t.Fatalf("table exercised %d rejections of %d", rejected, checked)
	}
}

// replayed is the key's state after op, by register.Replay of a log that
// first builds the state (value, token, fence) and then applies op.
func replayed(t *testing.T, mode string, value, token, fence int64, op string, tok, n int64) register.KeyState {
	t.Helper()
	var log []register.Entry
	cur := register.KeyState{Value: 0, Token: register.NoToken, Fence: register.NoToken}
	add := func(op string, hasTok bool, tok, v int64, next register.KeyState) {
		log = append(log, register.Entry{Seq: int64(len(log) + 1), Op: op, Key: "k", Token: tok, HasToken: hasTok, Value: v,
			Accepted: true, PrevValue: cur.Value, PrevToken: cur.Token, PrevFence: cur.Fence, Mode: mode})
		cur = next
	}
	if token != register.NoToken {
		add(register.OpWrite, true, token, value, register.KeyState{Value: value, Token: token, Fence: token})
	}
	if fence > cur.Fence {
		add(register.OpRead, true, fence, value, register.KeyState{Value: value, Token: token, Fence: fence})
	}
	if op == register.OpRead {
		n = value
	}
	log = append(log, register.Entry{Seq: int64(len(log) + 1), Op: op, Key: "k", Token: tok, HasToken: tok != register.NoToken,
		Value: n, Accepted: true, PrevValue: cur.Value, PrevToken: cur.Token, PrevFence: cur.Fence, Mode: mode})
	st, err := register.Replay(log)
	if err != nil {
		t.Fatal(err)
	}
	return st["k"]
}
