package recipes

// callback-done takes the leader's callback returning for the task being
// done, the classic mistake of taking a leadership callback or log line as
// evidence that work succeeded, which runs a task twice or never across a
// leader change (docs/background.md#exactly-once-effects). Its complete is
// reported ok once its callback returned, whatever happened to the task: a
// work cancelled by the leader's demotion, a call refused for its stale
// term or never answered, each is reported done, so no later leader runs
// the task again and it is never executed. exactly-once lists it missing
// after the run.
func init() { registerCandidate("callback-done", bugs{}, Leader{TrustCallback: true}) }
