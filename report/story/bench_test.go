package story

import (
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/history"
)

// BenchmarkTell: the pause-holder story, then 50 k more critical sections
// (about 400 k history events, 100 k apply-log lines), with the
// double-writer's evidence repeated to DefaultMax stories: the cost of a
// full page of stories on a long run.
func BenchmarkTell(b *testing.B) {
	r := pauseHolderRun()
	n := int64(1)
	for i := range 50_000 {
		r.critical(12000+float64(i)*20, history.Process(10+i%5), "SKU-3", int64(100+i), n)
		n++
	}
	res := checker.Run(b.Context(), checker.Input{History: r.h, ApplyLog: r.log, StartWall: wall0}, nil, []checker.Checker{doubleWriter})
	var d fence.DoubleWriterDetails
	if err := res.Checkers[fence.NameDoubleWriter].DecodeDetails(&d); err != nil {
		b.Fatal(err)
	}
	for len(d.Violations) < DefaultMax {
		d.Violations = append(d.Violations, d.Violations[0])
	}
	res.Checkers[fence.NameDoubleWriter] = checker.Result{Valid: checker.Invalid, Details: d}
	in := Input{History: r.h, ApplyLog: r.log, StartWall: wall0, Results: res}
	b.ReportMetric(float64(len(r.h)), "events")
	b.ResetTimer()
	for b.Loop() {
		if t := Tell(in); len(t.Stories) != DefaultMax {
			b.Fatalf("%d stories", len(t.Stories))
		}
	}
}
