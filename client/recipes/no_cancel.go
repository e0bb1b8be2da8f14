package recipes

// no-cancel does not cancel a task when its leadership ends (seed 000
// section 15: Leader回调到达和旧任务真正停止之间可能有窗口。任务执行器必须可取消;
// 21.3: 检查任务是否响应取消和中断). The work goes on after the demotion and
// its call goes out with the old term when the work is done: a second
// leader acting beside the new one. demoted-work sees the resource receive
// the deposed leader's call after that leader reported its demotion.
func init() { registerCandidate("no-cancel", bugs{}, Leader{KeepWorking: true}) }
