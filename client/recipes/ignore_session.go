package recipes

// ignore-session carries on after Disconnected and Expired (the classic
// mistake of staying in the critical section after the session expired:
// docs/background.md#the-queue-lock-recipe): a grant stays Held whatever
// the session did, and a release that finds its node gone calls it
// released. Its holder keeps writing after ZooKeeper gave the lock to
// another, and says so: the lock checker sees a release ok of a grant that
// another grant overlapped.
func init() { registerZoo(bugs{name: "ignore-session", ignoreSession: true}) }
