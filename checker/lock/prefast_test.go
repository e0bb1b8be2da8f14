package lock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/testkit/synth"
)

// prefastInputs are oracleInputs and longer synthetic runs (with and
// without faults, acquires that fail): the faster liveness and herd must
// give their former results byte for byte, listed order included.
func prefastInputs(t *testing.T) map[string]checker.Input {
	ins := oracleInputs(t)
	for i, spec := range []synth.Spec{
		{Ops: 40_000, Keys: 1, Seed: 3},
		{Ops: 40_000, Keys: 8, Seed: 4, FaultEvery: 2 * time.Second, Pause: 12 * time.Second},
		{Ops: 20_000, Keys: 3, Seed: 5, FaultEvery: time.Second, Pause: 20 * time.Second, FailEvery: 7, AcquireTimeout: time.Second},
	} {
		r, err := synth.Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		ins[fmt.Sprintf("synth %d", i)] = checker.Input{History: r.Events, MaxViolations: -1}
	}
	return ins
}

func TestLivenessMatchesPrefast(t *testing.T) {
	invalid := 0
	for name, in := range prefastInputs(t) {
		exact(t, name, in, CheckLiveness, prefastLiveness)
		if CheckLiveness(context.Background(), in).Valid == checker.Invalid {
			invalid++
		}
	}
	if invalid < 100 {
		t.Errorf("only %d inputs with stalls: the test would not see a wrong one", invalid)
	}
}

func TestHerdMatchesPrefast(t *testing.T) {
	var some, none int
	for name, in := range prefastInputs(t) {
		exact(t, name, in, CheckHerd, func(ctx context.Context, in checker.Input) checker.Result {
			return prefastHerdOf(ctx, in, history.FAcquire, history.FRelease)
		})
		if d := CheckHerd(context.Background(), in).Details.(HerdDetails); d.Implausible > 0 {
			some++
		} else if d.Acquires > 0 {
			none++
		}
	}
	if some < 100 || none < 100 {
		t.Errorf("%d inputs with implausible counts, %d without: too few for the test to see a wrong count", some, none)
	}
}
