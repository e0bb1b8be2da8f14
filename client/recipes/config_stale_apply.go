package recipes

// stale-apply (config workload) re-arms its watch on a notification with
// exists, which returns only the Stat, and applies the new version number
// with the data it read when it set the watch: a version and data that
// never went together, where a client must re-read data and Stat together
// (docs/background.md#configuration-notification). Every update exposes it, no fault needed; the
// config-consistent checker names it, since the applied (version, digest)
// pair is not one an admin wrote.
func init() { registerConfigZoo(configBugs{name: "stale-apply", staleApply: true}) }
