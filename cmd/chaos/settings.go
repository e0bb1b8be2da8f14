package main

import "github.com/zkchaos/zkchaos/run/runner"

// settingFlags are the flags of the run's settings, by runner.Config
// field: the runner names a setting it refuses by its field
// (runner.FieldError), and the user of this command knows it by its flag.
var settingFlags = map[string]string{
	"Name": "--name", "Workload": "--workload", "Admins": "--admins", "Tasks": "--tasks", "Idempotency": "--idempotency",
	"Workers": "--workers", "Keys": "--keys", "TimeLimit": "--time-limit", "SessionTimeout": "--session-timeout",
	"Fencing": "--fencing", "Resource": "--resource", "Nemesis": "--nemesis", "NemesisInterval": "--nemesis-interval",
	"FirstFault": "--first-fault", "PauseFor": "--pause", "Seed": "--seed", "ResultsDir": "--results", "Nodes": "--nodes",
	"Recipe": "--recipe", "Token": "--token", "Hold": "--hold", "Think": "--think", "AcquireTimeout": "--acquire-timeout",
	"OpTimeout": "--op-timeout", "TickTime": "--tick", "Recovery": "--recovery", "MonitorInterval": "--monitor-interval",
	"Cluster": "--cluster", "Service": "--service", "Image": "--image", "NoBuild": "--no-build", "ZK": "--zk",
	"Hosts": "--hosts", "SSHUser": "--ssh-user", "SSHPort": "--ssh-port", "SSHKey": "--ssh-key",
	"SSHKnownHosts": "--ssh-known-hosts", "Install": "--install", "Net": "--net", "Gate": "--gate",
	"CheckBudget": "--check-budget", "LockRoot": "--lock-root", "ACL": "--acl", "StopAtFirst": "--stop-at-first",
	"ResourcesInterval": "--resources-interval", "SummaryInterval": "--summary-interval",
	// Not a field: chaos soak's carrying on of a killed soak.
	"Resume": "--resume",
}

func init() {
	runner.NameSettings(func(field string) string { return settingFlags[field] })
}
