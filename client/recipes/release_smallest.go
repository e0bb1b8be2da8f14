package recipes

// release-smallest releases by deleting the smallest node of the queue,
// assuming the holder's node is the smallest (seed 000 section 23:
// 人工删除最小节点解锁). After its own session expired, the smallest node is
// the next holder's: the release revokes a legitimate holder while it
// works, and a third client is granted beside it.
func init() { registerZoo(bugs{name: "release-smallest", releaseSmallest: true}) }
