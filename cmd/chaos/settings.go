package main

import (
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/run/bench"
	"github.com/zkchaos/zkchaos/run/runner"
)

// A package below names a setting it speaks of by a field-like name
// (setting.Name: runner.Config's field, or a field of another command's
// config), and the user of this command knows it by its flag. The tables
// say which flag each name is, by the commands that have the flags.

// settingTable is the flags of some settings: each flag is one of
// commands' (settings_test.go checks it), and each name a field of config
// when config is not nil.
type settingTable struct {
	commands []string
	config   any
	flags    map[string]string
}

var settingTables = []settingTable{
	{commands: []string{"run", "soak"}, config: runner.Config{}, flags: map[string]string{
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
	}},
	// A run's own: the schedule it follows.
	{commands: []string{"run"}, config: runner.Config{}, flags: map[string]string{"Schedule": "--schedule", "StopAfterSchedule": "--stop-after-schedule"}},
	// A soak's own: carrying a killed soak on, its length (TimeLimit's
	// other flag, which the soak's figures name), its Prometheus address.
	{commands: []string{"soak"}, flags: map[string]string{
		"Resume": "--resume", "Duration": "--duration", "MetricsAddr": "--metrics-addr",
	}},
	{commands: []string{"run", "soak", "test-all", "gate"}, flags: map[string]string{"Progress": "--progress"}},
	{commands: []string{"bench"}, config: bench.Config{}, flags: map[string]string{
		"Clients": "--clients", "Nodes": "--nodes", "Window": "--window", "HelloStarts": "--hello-starts", "Warmup": "--warmup", "Subjects": "--subjects",
		"SessionTimeout": "--session-timeout", "TickTime": "--tick", "Net": "--net", "Cluster": "--cluster", "Name": "--name",
		"ResultsDir": "--results",
	}},
	{commands: []string{"test-all", "gate"}, flags: map[string]string{
		"Cells": "--cells", "List": "--list", "Matrix": "--matrix", "Recipe": "--recipe", "FailFast": "--fail-fast",
	}},
	{commands: []string{"serve"}, flags: map[string]string{"Addr": "--addr", "AllowRemote": "--allow-remote"}},
	{commands: []string{"cleanup"}, flags: map[string]string{"CleanupAll": "--all"}},
}

// settingFlags is every table in one: a name two tables give has the
// same flag in both (settings_test.go checks it).
var settingFlags = func() map[string]string {
	m := map[string]string{}
	for _, t := range settingTables {
		for name, flag := range t.flags {
			m[name] = flag
		}
	}
	return m
}()

func init() {
	setting.Register(func(name string) string { return settingFlags[name] })
}
