// Package fence judges whether the fenced register (resource/register)
// was protected by the lock under test, and whether the recipe presents
// its grant's fencing token. It has two checkers.
//
// double-writer (CheckDoubleWriter; NameDoubleWriter) reads the register's
// apply log (checker.Input.ApplyLog), the register's own record of every
// read and write it accepted or rejected, in commit order (Seq), and the
// history only to count the writes the workers saw succeed. Only accepted
// writes are evidence; a rejection is fencing doing its job. A key's
// accepted writes are a violation when one carries a lower token than a
// write accepted before it (token-regression), when a grant (token,
// process) writes again after another grant wrote (interleaved-grants),
// or when a counter write does not build on the previous accepted write
// (lost-update).
//   - invalid: at least one violation, even if the log is incomplete.
//   - unknown: no violation, but the log cannot be trusted to show them
//     all: it is empty or has fewer accepted writes of a key than the
//     history shows succeeded, its Seq numbers have gaps or repeats, or
//     no write was accepted at all (the run exercised nothing).
//   - valid: otherwise.
//
// wrong-token (CheckWrongToken; NameWrongToken) reads the history only
// (and checker.Input.Fencing). Every read or write answered fail with the
// register's fence (current_token) is a rejection; a rejection of a
// process that, by the history, still held the key (its last acquire of
// it answered ok, no release since), whose grant was not stale (recorded
// after a grant of the key with a higher token), that lost neither the
// lock nor its session since the grant (its own lost or expired events,
// or the nemesis' session-gone observations), and after whose grant no
// other process was granted the key before the rejection was answered, is
// a wrong token: the token presented cannot be its grant's. In strict
// mode a second write under one grant is explained too.
//   - invalid: at least one wrong token.
//   - valid: every rejection is explained (or there is none).
//   - unknown: only when the checker is cancelled (checker.Cancelled).
//
// Both are streams fed the whole input (Stream, WrongTokenStream): the
// live progress line and --stop-at-first feed the same rules one entry or
// event at a time.
package fence
