package suite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/internal/testkit/synth"
)

// synthInput is the checker input of a generated run (internal/testkit/synth).
func synthInput(b *testing.B, spec synth.Spec) checker.Input {
	b.Helper()
	r, err := synth.Generate(spec)
	if err != nil {
		b.Fatal(err)
	}
	return checker.Input{History: r.Events, ApplyLog: r.ApplyLog, StartWall: r.StartWall,
		Fencing: r.Spec.Fencing, SessionTimeout: r.Spec.SessionTimeout, Dir: b.TempDir()}
}

// BenchmarkLockCheckers measures each lock-level checker, and the pairing
// they share (lockview.Of), on generated runs of about 100k and 1M history
// events, with one hot key and with 8 keys: the sizes show whether a
// checker is n log n (events/s about the same at both) or worse. The
// project's target is 5 M events/s for each; events/s counts history
// events for every checker, double-writer included.
func BenchmarkLockCheckers(b *testing.B) {
	checkers := []checker.Checker{
		{Name: "lockview.Of", Check: func(context.Context, checker.Input) checker.Result { return checker.Result{} }},
		{Name: lock.NameGrantOverlap, Check: lock.CheckGrantOverlap},
		{Name: lock.NameTokenOrder, Check: lock.CheckTokenOrder},
		{Name: lock.NameHerd, Check: lock.CheckHerd},
		{Name: lock.NameLiveness, Check: lock.CheckLiveness},
		{Name: fence.NameDoubleWriter, Check: fence.CheckDoubleWriter},
		{Name: fence.NameWrongToken, Check: fence.CheckWrongToken},
	}
	for _, keys := range []int{1, 8} {
		for _, size := range []struct {
			label string
			ops   int
		}{{"100k", 50_000}, {"1M", 500_000}} {
			in := synthInput(b, synth.Spec{Ops: size.ops, Keys: keys, Seed: 1})
			for _, c := range checkers {
				b.Run(fmt.Sprintf("%s/keys=%d/%s", c.Name, keys, size.label), func(b *testing.B) {
					for b.Loop() {
						if c.Name == "lockview.Of" {
							lockview.Of(in.History)
							continue
						}
						if r := c.Check(context.Background(), in); r.Valid == checker.Unknown {
							b.Fatalf("%s: unknown: %s", c.Name, r.Error)
						}
					}
					b.ReportMetric(float64(len(in.History))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
				})
			}
		}
	}
}

// BenchmarkSuiteHour runs the whole suite (RunAll) on a generated run of
// about an hour (chaos run's defaults, 3 keys): the project's target is
// a 1-hour soak checked in 30 s or less.
func BenchmarkSuiteHour(b *testing.B) {
	in := synthInput(b, synth.Spec{Ops: 215_000, Seed: 1})
	b.Logf("%d events over %v", len(in.History), time.Duration(in.History[len(in.History)-1].Time).Round(time.Second))
	for b.Loop() {
		RunAll(context.Background(), in, nil)
	}
	b.ReportMetric(float64(len(in.History))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
