package checker

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkchaos/zkchaos/register"
)

// benchSizes are the history lengths of the benchmarks (events).
var benchSizes = []int{10_000, 100_000, 1_000_000}

// benchInput is a realistic lock history: 10 keys, 5 workers per key (4
// waiting acquires open beside the holder), 2% of reads and writes info.
func benchInput(b *testing.B, events, workersPerKey int) Input {
	b.Helper()
	es, log := genLockHistory(genSpec{Seed: 7, Events: events, Keys: 10, WorkersPerKey: workersPerKey,
		InfoShare: 0.02, Mode: register.ModeOn})
	return Input{History: es, ApplyLog: log, Fencing: register.ModeOn}
}

// BenchmarkCheckers measures every checker on histories of 10k, 100k and
// 1M events; events/s counts history events (and apply-log entries for
// double-writer).
func BenchmarkCheckers(b *testing.B) {
	for _, n := range benchSizes {
		in := benchInput(b, n, 5)
		for _, c := range []Checker{{NameDoubleWriter, CheckDoubleWriter}, {NameStats, CheckStats},
			{NameRegister, CheckRegister}, {NameMutex, CheckMutex}} {
			b.Run(fmt.Sprintf("%s/%d", c.Name, n), func(b *testing.B) {
				items := len(in.History)
				if c.Name == NameDoubleWriter {
					items = len(in.ApplyLog)
				}
				for b.Loop() {
					if r := c.Check(context.Background(), in); r.Valid != Valid {
						b.Fatalf("%s: %v %s", c.Name, r.Valid, r.Error)
					}
				}
				b.ReportMetric(float64(items)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// BenchmarkPorcupineConcurrency holds the history at 100k events over 10
// keys and raises the workers contending per key, to find where
// porcupine's search stops being linear.
func BenchmarkPorcupineConcurrency(b *testing.B) {
	for _, w := range []int{1, 2, 5, 10, 20, 50} {
		in := benchInput(b, 100_000, w)
		for _, c := range []Checker{{NameRegister, CheckRegister}, {NameMutex, CheckMutex}} {
			b.Run(fmt.Sprintf("%s/workers-per-key=%d", c.Name, w), func(b *testing.B) {
				for b.Loop() {
					if r := c.Check(context.Background(), in); r.Valid != Valid {
						b.Fatalf("%s: %v %s", c.Name, r.Valid, r.Error)
					}
				}
				b.ReportMetric(float64(len(in.History))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
