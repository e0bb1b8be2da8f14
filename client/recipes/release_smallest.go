package recipes

// release-smallest releases by deleting the smallest node of the queue,
// assuming the holder's node is the smallest: the classic mistake of
// deleting "the lowest node" instead of one's own, by code or by hand
// (docs/background.md#the-queue-lock-recipe,
// docs/background.md#what-the-runbook-asks). After its own session expired,
// the smallest node is the next holder's: the release revokes a legitimate
// holder while it works, and a third client is granted beside it.
func init() { registerZoo(bugs{name: "release-smallest", releaseSmallest: true}) }
