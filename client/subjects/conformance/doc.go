// Package conformance holds the tests that hold every worker of the
// project — `chaos-worker` (Go), the Curator worker (Java) and the kazoo
// worker (Python) — to the answers docs/worker-protocol.md gives: a
// session the worker closes itself, a release after ConnectionLoss and
// expiry, wake-ups per acquire,
// an election (campaign, timeout, resign, terms, claim and complete),
// the lost reasons, where a read's current_token comes from, and how
// strictly timeout_ms is kept.
//
// The tests drive real worker processes over their stdin and stdout
// against a real ZooKeeper server and the real register, reading every
// line in the order the worker wrote it, so that ordering promises are
// checked too. It is a package of its own so that no other package's
// test timeout binds, and it imports only what it drives: the subjects
// that start workers and the protocol types.
//
// The opt-in herd sweep (ZKCHAOS_HERD_SWEEP=1) lives here as well: it
// runs real `chaos run` runs and prints the herd checker's verdicts.
package conformance
