// Package gateworkloads tests `chaos gate --workload election|config` the
// way a team gates its own client: the quick standard cells against
// subjects started from scripts written from docs/worker-protocol.md
// alone (Python with Debian's kazoo), a correct one (must pass) and one
// with a known bug of the zoo (must fail, naming the cell), and bad input
// refused before anything starts. About 4 minutes of real runs. See
// tests/core for why integration tests are split into packages.
package gateworkloads
