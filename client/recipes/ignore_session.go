package recipes

// ignore-session carries on after Disconnected and Expired (seed 000
// section 23: Session过期后继续临界区): a grant stays Held whatever the
// session did, and a release that finds its node gone calls it released.
// Its holder keeps writing after ZooKeeper gave the lock to another, and
// says so: the lock checker sees a release ok of a grant that another
// grant overlapped.
func init() { registerZoo(bugs{name: "ignore-session", ignoreSession: true}) }
