package linear

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
)

// BenchmarkPorcupineConcurrency holds the history at 100k events over 10
// keys and raises the workers contending per key, to find where
// porcupine's search stops being linear.
func BenchmarkPorcupineConcurrency(b *testing.B) {
	for _, w := range []int{1, 2, 5, 10, 20, 50} {
		in := checktest.BenchInput(100_000, w)
		for _, c := range []checker.Checker{{Name: NameRegister, Check: CheckRegister}, {Name: NameMutex, Check: CheckMutex}} {
			b.Run(fmt.Sprintf("%s/workers-per-key=%d", c.Name, w), func(b *testing.B) {
				for b.Loop() {
					if r := c.Check(context.Background(), in); r.Valid != checker.Valid {
						b.Fatalf("%s: %v %s", c.Name, r.Valid, r.Error)
					}
				}
				b.ReportMetric(float64(len(in.History))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
