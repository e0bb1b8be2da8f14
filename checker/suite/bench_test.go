package suite

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/checker/linear"
	"github.com/zkchaos/zkchaos/checker/stats"
)

// benchSizes are the history lengths of the benchmarks (events).
var benchSizes = []int{10_000, 100_000, 1_000_000}

// BenchmarkCheckers measures every checker on histories of 10k, 100k and
// 1M events; events/s counts history events (and apply-log entries for
// double-writer).
func BenchmarkCheckers(b *testing.B) {
	for _, n := range benchSizes {
		in := checktest.BenchInput(n, 5)
		for _, c := range []checker.Checker{{Name: integrity.Name, Check: integrity.Check}, {Name: fence.NameDoubleWriter, Check: fence.CheckDoubleWriter},
			{Name: stats.Name, Check: stats.CheckStats}, {Name: linear.NameRegister, Check: linear.CheckRegister},
			{Name: linear.NameMutex, Check: linear.CheckMutex}} {
			b.Run(fmt.Sprintf("%s/%d", c.Name, n), func(b *testing.B) {
				items := len(in.History)
				if c.Name == fence.NameDoubleWriter {
					items = len(in.ApplyLog)
				}
				for b.Loop() {
					if r := c.Check(context.Background(), in); r.Valid != checker.Valid {
						b.Fatalf("%s: %v %s", c.Name, r.Valid, r.Error)
					}
				}
				b.ReportMetric(float64(items)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
