// Package stats summarises a run; it judges nothing. Its one checker,
// stats (CheckStats; Name), reads the history (completions and latency
// per operation, lock wait and hold times, session, lost and late events,
// nemesis operations and how many were unverified, timeouts, completions
// without an invocation) and the apply log (the register's accepted and
// rejected reads and writes, rejections by reason).
//   - valid: whenever it finishes; it never fails a run.
//   - unknown: only when cancelled.
//   - invalid: never.
package stats
