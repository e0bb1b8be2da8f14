// Package acl holds the integration tests of the protected lock roots
// (--acl), the rogue-client fault, the run's secrets (never in the run
// folder or in ps) and Curator authenticating like the Go workers. See
// tests/core for why integration tests are split into packages.
package acl
