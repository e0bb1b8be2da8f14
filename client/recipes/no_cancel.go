package recipes

// no-cancel does not cancel a task when its leadership ends. There is
// always a window between a leadership callback and the old task really
// stopping, so a task executor must be cancellable, and the runbook asks
// whether tasks honour cancellation (docs/background.md#leader-election,
// docs/background.md#what-the-runbook-asks). The work goes on after the
// demotion and its call goes out with the old term when the work is done: a second
// leader acting beside the new one. demoted-work sees the resource receive
// the deposed leader's call after that leader reported its demotion.
func init() { registerCandidate("no-cancel", bugs{}, Leader{KeepWorking: true}) }
