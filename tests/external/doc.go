// Package external holds the integration tests of the external backend
// (--cluster external --zk ...): a real three-server ensemble started by
// the test through cluster/local (loopback, as a user's ensemble on this
// machine would be), then chaos runs against it that may only act as
// clients: fenced valid and unfenced caught under pause-holder, a server
// fault and an unreachable address refused before anything starts, and
// the run's own subtree gone afterwards while the test's znode survives.
package external
