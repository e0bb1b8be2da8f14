package recipes

// no-term has no token at all: every grant, and so every leadership,
// presents 0 (seed 000 section 15: a new leader must take a new fencing
// token; 23: 没有Token只能依赖业务事实对账). Nothing can tell an old
// leader's call from a new one's: the fence has nothing to compare, and
// the term-order checker sees many leaders share one term (the lock
// workload's token-order sees tokens that do not grow).
func init() { registerZoo(bugs{name: "no-term", token: tokenNone}) }
