package recipes

// herd watches the head of the queue instead of the immediate predecessor
// (the classic mistake of everyone watching the smallest node:
// docs/background.md#the-queue-lock-recipe). It is still safe, since a
// waiter lists again when woken, but every release wakes every waiter: the
// herd effect, a read storm on ZooKeeper that grows with the queue. The
// herd checker sees it as watch wake-ups per hand-off close to the number
// of waiters instead of about one.
func init() { registerZoo(bugs{name: "herd", herd: true}) }
