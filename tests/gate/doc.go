// Package gate tests `chaos gate` the way a team's CI runs it: the
// commands of docs/ci.md's marked block, exactly, against a correct
// client (must pass), the gate against a broken one (must fail, naming
// the cell), and the gate's baseline stopping it at once for subjects
// that cannot run. About 2 minutes of real runs. See tests/core for why
// integration tests are split into packages.
package gate
