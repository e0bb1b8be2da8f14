package recipes

// no-term has no token at all: every grant, and so every leadership,
// presents 0, where a new leader must take a new fencing token; without
// one, only reconciliation against business facts can repair a double
// execution (docs/background.md#leader-election,
// docs/background.md#what-the-runbook-asks). Nothing can tell an old
// leader's call from a new one's: the fence has nothing to compare, and the
// term-order checker sees many leaders share one term (the lock workload's
// token-order sees tokens that do not grow).
func init() { registerZoo(bugs{name: "no-term", token: tokenNone}) }
