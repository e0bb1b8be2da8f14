package linear

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/internal/testkit/synth"
)

// heapPeak collects garbage and samples the live heap every 20 ms until
// stopped, and returns the highest seen: what a check holds at its worst.
func heapPeak() (stop func() uint64) {
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.GC()
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// BenchmarkLinearHour checks a synthetic 1-hour run (internal/testkit/synth,
// chaos run's defaults: 3 keys, 6 workers, a pause-holder fault every
// 4 s of quiet, fencing off) whole (porcupine on each key's whole
// history, as before segments), segmented in batch (CheckRegister,
// CheckMutex) and as a stream (NewStream, fed event by event, one segment
// checked at a time, as a soak would): time, and the peak heap above the
// history itself (peak-MB), which for the stream is what a soak's
// porcupine check holds.
func BenchmarkLinearHour(b *testing.B) {
	r, err := synth.Generate(synth.Spec{Ops: 215_000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	in := checker.Input{History: r.Events, ApplyLog: r.ApplyLog, StartWall: r.StartWall, Fencing: r.Spec.Fencing}
	b.Logf("%d events over %v", len(in.History), time.Duration(in.History[len(in.History)-1].Time).Round(time.Second))
	for _, name := range []string{NameRegister, NameMutex} {
		want := whole(name, in).Valid
		forms := []struct {
			form string
			run  func() checker.Result
		}{
			{"whole", func() checker.Result { return whole(name, in) }},
			{"segmented", func() checker.Result { return checkBatch(context.Background(), in, name, true) }},
			{"stream", func() checker.Result {
				s, err := NewStream(context.Background(), StreamConfig{Checker: name, Fencing: in.Fencing})
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range in.History {
					s.Add(e)
				}
				return s.Result()
			}},
		}
		for _, f := range forms {
			b.Run(name+"/"+f.form, func(b *testing.B) {
				var d *LinearDetails
				for b.Loop() {
					res := f.run()
					if res.Valid != want {
						b.Fatalf("%s %s: %v (%s), whole says %v", name, f.form, res.Valid, res.Error, want)
					}
					d, _ = res.Details.(*LinearDetails)
				}
				// The heap once more, outside the timing (collecting
				// every 20 ms slows the check).
				b.StopTimer()
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				stop := heapPeak()
				f.run()
				if p := stop(); p > m.HeapAlloc {
					b.ReportMetric(float64(p-m.HeapAlloc)/1e6, "peak-live-MB")
				}
				b.StartTimer()
				b.ReportMetric(float64(len(in.History))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
				if d != nil {
					largest := 0
					for _, k := range d.Keys {
						largest = max(largest, k.LargestSegment)
					}
					b.ReportMetric(float64(largest), "largest-segment-ops")
					b.ReportMetric(float64(d.Segments), "segments")
				}
			})
		}
	}
}

// BenchmarkLinearStreamHeld feeds synthetic runs of 15 minutes, 1 and 2
// hours to a register Stream and collects garbage every 20 000 events:
// held-MB is the most the stream kept between events (its open segments,
// the pairing's per-process state and the bounded page notes), which must
// not grow with the run's length.
func BenchmarkLinearStreamHeld(b *testing.B) {
	for _, c := range []struct {
		name string
		ops  int
	}{{"15min", 54_000}, {"1h", 215_000}, {"2h", 430_000}} {
		r, err := synth.Generate(synth.Spec{Ops: c.ops, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			var held uint64
			for b.Loop() {
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				base := m.HeapAlloc
				s, err := NewStream(context.Background(), StreamConfig{Checker: NameRegister, Fencing: r.Spec.Fencing})
				if err != nil {
					b.Fatal(err)
				}
				for i, e := range r.Events {
					s.Add(e)
					if i%20_000 == 0 {
						runtime.GC()
						runtime.ReadMemStats(&m)
						held = max(held, m.HeapAlloc-min(base, m.HeapAlloc))
					}
				}
				s.Result()
			}
			b.ReportMetric(float64(held)/1e6, "held-MB")
			b.ReportMetric(float64(len(r.Events)), "events")
		})
	}
}
