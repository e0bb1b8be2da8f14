package nemesis

import (
	"slices"
	"strings"
	"testing"
)

func TestValidateForRefusesPartitionsWithoutNetns(t *testing.T) {
	for _, list := range [][]string{{"partition-zk-halves"}, {"pause-zk", "partition-zk-ring"}} {
		err := ValidateFor(list, false)
		if err == nil || !strings.Contains(err.Error(), "need network namespaces") {
			t.Errorf("ValidateFor(%v, loopback) = %v; want refusal", list, err)
		}
		if err := ValidateFor(list, true); err != nil {
			t.Errorf("ValidateFor(%v, netns) = %v", list, err)
		}
	}
	if err := ValidateFor([]string{All}, false); err != nil {
		t.Errorf("all in loopback: %v; want accepted (without the partitions)", err)
	}
}

func TestExpandAll(t *testing.T) {
	with := Expand([]string{All, "pause-zk"}, true)
	without := Expand([]string{All}, false)
	for _, f := range []string{"pause-zk-leader", "pause-zk", "kill-zk", "partition-zk-leader",
		"partition-zk-halves", "partition-zk-ring", "partition-zk-bridge", "pause-holder"} {
		if !slices.Contains(with, f) {
			t.Errorf("all (netns) lacks %s: %v", f, with)
		}
	}
	for _, f := range without {
		if NeedsNetns(f) {
			t.Errorf("all (loopback) includes %s, which needs namespaces", f)
		}
	}
	if !slices.Contains(without, "kill-zk") {
		t.Errorf("all (loopback) lacks kill-zk: %v", without)
	}
	if !slices.IsSorted(with) || len(slices.Compact(slices.Clone(with))) != len(with) {
		t.Errorf("all is not sorted and unique: %v", with)
	}
	if got := Expand([]string{"none"}, true); len(got) != 0 {
		t.Errorf("none expands to %v", got)
	}
}
