// Package zoo holds the known-bug zoo's calibration test (docs/zoo.md):
// about 10 minutes, so it runs only with ZKCHAOS_ZOO set; CI runs the same
// rows as cells of chaos test-all. See tests/core for why integration
// tests are split into packages.
package zoo
