package resources

import "time"

// Trend compares a figure early in a run with the same figure at its end,
// so a leak shows as one number: each side is the mean over a window of
// samples (one sample would be at the mercy of a garbage collection).
type Trend struct {
	// From and To are the means, FromAt and ToAt where their windows
	// start on the run's clock.
	From, To     float64
	FromAt, ToAt time.Duration
	// Judged is false when the run is too short to have both windows
	// apart (Why says so); Growth is then 0.
	Judged bool
	Why    string
	// Growth is To/From - 1 (0.12: 12% more at the end).
	Growth float64
}

// TrendOf is figure's trend between the window starting at from and the
// last window of samples, each window long. The run must last at least
// from + 2 windows, so the two do not overlap.
func TrendOf(samples []Sample, figure func(Sample) (float64, bool), from, window time.Duration) Trend {
	var tr Trend
	if len(samples) == 0 {
		tr.Why = "no samples"
		return tr
	}
	end := time.Duration(samples[len(samples)-1].TimeNS)
	if end < from+2*window {
		tr.Why = "the run sampled " + end.Round(time.Second).String() + ", shorter than " + (from + 2*window).String()
		return tr
	}
	tr.FromAt, tr.ToAt = from, end-window
	var ok1, ok2 bool
	tr.From, ok1 = mean(samples, figure, tr.FromAt, tr.FromAt+window)
	tr.To, ok2 = mean(samples, figure, tr.ToAt, end+1)
	if !ok1 || !ok2 || tr.From <= 0 {
		tr.Why = "no readable sample in a window"
		return tr
	}
	tr.Judged, tr.Growth = true, tr.To/tr.From-1
	return tr
}

func mean(samples []Sample, figure func(Sample) (float64, bool), from, to time.Duration) (float64, bool) {
	var sum float64
	n := 0
	for _, s := range samples {
		if t := time.Duration(s.TimeNS); t < from || t >= to {
			continue
		}
		if v, ok := figure(s); ok {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// ControllerRSS is the controller's RSS in a sample, for TrendOf.
func ControllerRSS(s Sample) (float64, bool) {
	p, ok := s.Controller()
	return float64(p.RSS), ok && p.RSS > 0
}

// ControllerHeap is the controller's live Go heap in a sample, for
// TrendOf.
func ControllerHeap(s Sample) (float64, bool) {
	p, ok := s.Controller()
	return float64(p.HeapLive), ok && p.HeapLive > 0
}

// DataBytes is the servers' data directories together in a sample,
// for TrendOf and the growth rate; false when one could not be read.
func DataBytes(s Sample) (float64, bool) {
	var sum int64
	for _, sv := range s.Servers {
		if sv.DataBytes < 0 {
			return 0, false
		}
		sum += sv.DataBytes
	}
	return float64(sum), len(s.Servers) > 0
}

// PerHour is how fast figure grew from the first readable sample to the
// last, per hour of the run's clock; false with fewer than two readable
// samples a second apart.
func PerHour(samples []Sample, figure func(Sample) (float64, bool)) (float64, bool) {
	first, last := -1, -1
	var v0, v1 float64
	for i, s := range samples {
		if v, ok := figure(s); ok {
			if first < 0 {
				first, v0 = i, v
			}
			last, v1 = i, v
		}
	}
	if first < 0 {
		return 0, false
	}
	dt := time.Duration(samples[last].TimeNS - samples[first].TimeNS)
	if dt < time.Second {
		return 0, false
	}
	return (v1 - v0) / dt.Hours(), true
}
