package recipes

// blind-cas (config workload) is an admin whose update ignores the version
// it read and calls setData with version -1: last writer wins. Two admins
// updating from the same version expose it (no fault needed; a pause or
// partition that makes one of them act on an old read widens the window):
// both updates succeed and one is silently overwritten. The config-cas
// checker names it: an ok update whose new version is not its
// expected_version + 1 was based on a version it did not write over.
func init() { registerConfigZoo(configBugs{name: "blind-cas", blindCAS: true}) }
