package recipes

// no-rewatch (config workload) forgets that ZooKeeper watches fire once:
// on the first notification it re-reads the config but sets no new watch,
// so it applies the first update and never hears of another. Two updates
// in a row expose it, no fault needed (a session expiry does the same to a
// client that does not resync); the config-convergence checker names it,
// since the client never applies the final version.
func init() { registerConfigZoo(configBugs{name: "no-rewatch", noRewatch: true}) }
