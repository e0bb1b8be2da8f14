// Package lock judges a lock recipe from the history alone: the workers'
// acquires and releases (with their tokens and wake-up counts), their
// session and lost events, and the nemesis' faults and session-gone
// observations (checker.Input.History, paired by checker/lockview). It
// reads no apply log. It has four checkers.
//
// grant-overlap (CheckGrantOverlap; NameGrantOverlap) is exact mutual
// exclusion: a release answered ok claims the holder's node existed until
// it was deleted, so another process granted the key between the holder's
// grant and that release's invocation is an overlap, unless the holder's
// session was lost before the intruder's grant (reported by the holder,
// or seen gone by the nemesis); a release answered ok after the nemesis
// saw the holder's session gone is a false release.
//   - invalid: at least one overlap or false release.
//   - valid: none.
//
// token-order (CheckTokenOrder; NameTokenOrder): each grant of a key, in
// the order of the acquires' oks, carries a higher token than the grant
// before it.
//   - invalid: at least one grant that did not raise the token.
//   - valid: none (grants without a token are not judged).
//
// liveness (CheckLiveness; NameLiveness) finds locks that stop being
// handed on: a key free by the history while someone waits for it, for
// longer than a threshold derived from the acquire timeout, or a key
// without a grant for far longer than the acquire timeout while acquires
// on it keep failing. Time inside nemesis fault windows (plus a grace) is
// not counted, and a holder whose outcome is unknown holds until someone
// else is granted the key.
//   - invalid: at least one stall.
//   - valid: none, or no acquires at all.
//
// herd (CheckHerd; NameHerd) measures the herd effect from the wake-ups
// each acquire answer reports (docs/worker-protocol.md): R, wake-ups per
// acquire answer, is at most about 1 for a recipe that watches its
// predecessor.
//   - invalid: R > HerdThreshold and R > (MeanWaiters+1)/2 (the wake-ups
//     grow with the queue).
//   - unknown: no wake-up counts in the history, or more than a tenth of
//     the answers (and more than 2) report more wake-ups than the queue
//     could cause during them.
//   - valid: otherwise.
//
// Any of them is unknown when cancelled (checker.Cancelled). grant-overlap
// and token-order are streams fed the whole history (OverlapStream,
// TokenOrderStream), so a run can judge them as the history is written.
package lock
