package suite

import (
	"context"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/internal/testkit/synth"
)

// BenchmarkCheckers100k runs each checker of the lock workload on the
// synthetic 100 000-operation run that the report's benchmarks use
// (internal/testkit/synth: chaos run's defaults, about 28 min, 166 pause-holder
// faults, fencing off, so double-writer and the porcupine checkers find
// violations), to set the report's cost beside the checkers'.
func BenchmarkCheckers100k(b *testing.B) {
	r, err := synth.Generate(synth.Spec{Ops: 100_000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	in := checker.Input{History: r.Events, ApplyLog: r.ApplyLog, StartWall: r.StartWall,
		Fencing: r.Spec.Fencing, SessionTimeout: r.Spec.SessionTimeout, Dir: b.TempDir()}
	for _, c := range All() {
		b.Run(c.Name, func(b *testing.B) {
			for b.Loop() {
				if res := c.Check(context.Background(), in); res.Valid == checker.Unknown {
					b.Fatalf("%s: unknown: %s", c.Name, res.Error)
				}
			}
		})
	}
}
