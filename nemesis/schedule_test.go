package nemesis

import (
	"slices"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/cluster"
)

// Caps of the runs the tests validate against.
var (
	netnsRun    = Caps{Cluster: cluster.Capabilities{Backend: "local"}, WorkerNet: true}
	loopbackRun = Caps{Cluster: cluster.Capabilities{Backend: "local",
		Lacks: map[cluster.Capability]string{cluster.CanPartition: "loopback"}}}
	noServerFaults = Caps{WorkerNet: true, Cluster: cluster.Capabilities{Backend: "external",
		Lacks: map[cluster.Capability]string{cluster.CanPause: "not ours", cluster.CanKill: "not ours", cluster.CanPartition: "not ours"}}}
)

func TestValidateForRefusesWhatTheRunCannotDo(t *testing.T) {
	for _, list := range [][]string{{"partition-zk-halves"}, {"pause-zk", "partition-zk-ring"}, {"isolate-holder"}} {
		err := ValidateFor(list, loopbackRun)
		if err == nil || !strings.Contains(err.Error(), list[len(list)-1]+":") {
			t.Errorf("ValidateFor(%v, loopback) = %v; want refusal naming %s", list, err, list[len(list)-1])
		}
		if err := ValidateFor(list, netnsRun); err != nil {
			t.Errorf("ValidateFor(%v, netns) = %v", list, err)
		}
	}
	err := ValidateFor([]string{"pause-zk", "kill-zk", "pause-holder"}, noServerFaults)
	if err == nil || !strings.Contains(err.Error(), "the external backend cannot pause a server: not ours") ||
		!strings.Contains(err.Error(), "kill-zk:") || strings.Contains(err.Error(), "pause-holder") {
		t.Errorf("server faults on a backend without them: %v; want pause-zk and kill-zk refused with why", err)
	}
	if err := ValidateFor([]string{All}, loopbackRun); err != nil {
		t.Errorf("all in loopback: %v; want accepted (without the partitions)", err)
	}
}

func TestExpandAll(t *testing.T) {
	with := Expand([]string{All, "pause-zk"}, netnsRun)
	without := Expand([]string{All}, loopbackRun)
	for _, f := range []string{"pause-zk-leader", "pause-zk", "pause-zk-majority", "kill-zk", "partition-zk-leader",
		"partition-zk-halves", "partition-zk-ring", "partition-zk-bridge", "pause-holder", "isolate-holder"} {
		if !slices.Contains(with, f) {
			t.Errorf("all (netns) lacks %s: %v", f, with)
		}
	}
	for _, f := range without {
		if err := Usable(f, loopbackRun); err != nil {
			t.Errorf("all (loopback) includes %s: %v", f, err)
		}
	}
	if !slices.Contains(without, "kill-zk") || slices.Contains(without, "partition-zk-ring") || slices.Contains(without, "isolate-holder") {
		t.Errorf("all (loopback) = %v; want kill-zk, no partitions, no isolate-holder", without)
	}
	client := Expand([]string{All}, noServerFaults)
	for _, f := range client {
		if strings.Contains(f, "-zk") {
			t.Errorf("all without server verbs includes %s: %v", f, client)
		}
	}
	if !slices.IsSorted(with) || len(slices.Compact(slices.Clone(with))) != len(with) {
		t.Errorf("all is not sorted and unique: %v", with)
	}
	if got := Expand([]string{"none"}, netnsRun); len(got) != 0 {
		t.Errorf("none expands to %v", got)
	}
}
