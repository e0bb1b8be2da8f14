package recipes

// get-not-exists watches the predecessor with a data read instead of exists
// (the classic mistake of waiting although the predecessor is already gone:
// docs/background.md#the-queue-lock-recipe). A read of a node that is
// already gone leaves no watch, but the waiter waits anyway: the lock is
// free, the waiter is first, and nothing will ever wake it (here: until its
// acquire times out). The liveness checker sees the key free while waiters
// are stuck.
func init() { registerZoo(bugs{name: "get-not-exists", getNotExists: true}) }
