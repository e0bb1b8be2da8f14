// Package stream is the shape of an exact checker that judges its input
// while the run is writing it: the apply log line by line as the register
// commits, or the history event by event. The batch checker of the same
// question is the stream fed the whole input, so the rules exist once and
// the live answer and the final one cannot disagree about what a
// violation is.
//
// A streaming checker is a progress signal while the run lasts (the live
// line of chaos run, the soak run's alerts); the verdict still comes from
// the full check after the run, which also judges what a stream cannot see
// (whether the input is complete, the history beside the apply log).
package stream

// Checker is an exact checker fed its input one item at a time, in the
// order the input was written (commit order for the apply log). V is the
// checker's own evidence of a violation.
type Checker[In, V any] interface {
	// Name is the checker's name, as in results.json.
	Name() string
	// Add judges the next item and returns the violations it completes
	// (nil: none), so a violation is known at the item that makes it.
	Add(In) []V
}

// Found is a violation as a history stream reports it while the run
// lasts: enough for the live line and the log (the report has the full
// check's evidence).
type Found struct {
	Key string
	// TimeNS is when (run clock) the violation happened.
	TimeNS  int64
	Message string
}
