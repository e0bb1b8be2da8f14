package worker

import (
	"fmt"
	"strings"
)

// Protocol is the version of the worker protocol this build speaks: the
// built-in worker sends it in its hello, and the controller compares a
// worker's with it. It grows by one with every change a worker written
// against the version before could miss (docs/worker-protocol.md,
// "Versions"), and the change is added to Changes.
const Protocol = 6

// Change is what one version of the protocol added or made stricter.
type Change struct {
	Version int
	// Date is the day the change reached the protocol (UTC).
	Date string
	// What names the change in a few words, with the names a worker's
	// author looks for (variables, headers, fields, flags).
	What string
}

// Changes lists every version after the first, oldest first. Version 1
// is the protocol as it was first written down: the start-up flags, the
// hello, session and lost events, acquire, read, write and release, the
// register's /read and /write, timeouts and retirement.
var Changes = []Change{
	{2, "2026-11-30", "stricter answers: a closed session reported (session and lost events with state closed) at exit, " +
		"a release answered info when its outcome is unknown, current_token, how strictly timeout_ms is kept, optional wakeups, " +
		"lines handled in the order written and a broken line retiring the worker"},
	{3, "2026-11-30", "credentials: the ZooKeeper credential from ZKCHAOS_ZK_AUTH added before the first request and nodes created " +
		"with CREATOR_ALL_ACL plus READ_ACL_UNSAFE (without it every create under the run's lock root is refused, NoAuth); " +
		"the register secret from ZKCHAOS_REGISTER_SECRET sent as Authorization: Bearer with every register call (without it, 401)"},
	{4, "2026-11-30", "workloads: the workload flag (config, election), the hello's workload field, the config verbs and applied events, " +
		"the election verbs, demoted events and the register's task table"},
	{5, "2026-12-01", "other services and resources: the service flag (redis, etcd) with servers instead of zk, " +
		"and postgres instead of register (built-in workers only)"},
	{6, "2026-12-02", "the hello's protocol field, this version"},
}

// ChangesSince are the changes a worker of version v was not written
// for: those after v, or every one when the worker named no version
// (v <= 0), since it may predate any of them.
func ChangesSince(v int) []Change {
	var out []Change
	for _, c := range Changes {
		if c.Version > v {
			out = append(out, c)
		}
	}
	return out
}

// VersionNotice says what a worker's hello version means to this
// controller: "" for the current version; otherwise why it may not
// speak the protocol this controller holds it to, naming each change it
// may have missed. A worker is never refused for its version: a worker
// of another version may well speak every part a run uses.
func VersionNotice(v int) string {
	switch {
	case v == Protocol:
		return ""
	case v > Protocol:
		return fmt.Sprintf("the worker speaks protocol %d, newer than this controller's %d", v, Protocol)
	}
	who := fmt.Sprintf("the worker speaks protocol %d", v)
	if v <= 0 {
		who = "the worker's hello names no protocol version"
	}
	var parts []string
	for _, c := range ChangesSince(v) {
		parts = append(parts, fmt.Sprintf("%d (%s): %s", c.Version, c.Date, c.What))
	}
	return fmt.Sprintf("%s; this controller's is %d, and these changed since: %s (docs/worker-protocol.md, \"Versions\")",
		who, Protocol, strings.Join(parts, "; "))
}
