package recipes

// callback-done takes the leader's callback returning for the task being
// done (seed 000 section 17: 不以Leader回调日志作为成功事实; 23: Leader回调
// 等于任务成功 → 切换窗口重复执行或漏执行). Its complete is reported ok once
// its callback returned, whatever happened to the task: a work cancelled
// by the leader's demotion, a call refused for its stale term or never
// answered, each is reported done, so no later leader runs the task again
// and it is never executed. exactly-once lists it missing after the run.
func init() { registerCandidate("callback-done", bugs{}, Leader{TrustCallback: true}) }
