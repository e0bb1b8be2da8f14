package recipes

// no-delete-on-timeout gives up an acquire on timeout without deleting
// its queue node, where a waiter that gives up must delete its own node
// (docs/background.md#the-queue-lock-recipe). The node stays while the session
// lives, and everyone queued behind it waits for a holder that will never
// come: the key is dead for as long as that worker runs. The liveness
// checker sees the key free while waiters time out one after another.
func init() { registerZoo(bugs{name: "no-delete-on-timeout", noDeleteOnTimeout: true}) }
