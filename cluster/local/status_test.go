package local

import (
	"errors"
	"testing"

	"github.com/zkchaos/zkchaos/cluster"
)

// TestEtcdStatus: a member that names itself leader leads, one that
// knows another leader follows, one that knows none does not serve.
func TestEtcdStatus(t *testing.T) {
	st := func(member, leader string) etcdStatus {
		var s etcdStatus
		s.Header.MemberID, s.Header.Revision, s.Leader = member, "42", leader
		return s
	}
	for _, tc := range []struct {
		in      etcdStatus
		mode    string
		serving bool
	}{
		{st("7", "7"), "leader", true},
		{st("7", "9"), "follower", true},
		{st("7", "0"), "", false},
		{st("7", ""), "", false},
	} {
		got := parseEtcdStatus(tc.in)
		if got.Mode != tc.mode || got.Serving != tc.serving || got.Zxid != 42 {
			t.Errorf("%+v -> %+v, want %s serving=%v", tc.in, got, tc.mode, tc.serving)
		}
	}
}

// TestRedisReady: independent masters are ready when every one answers.
func TestRedisReady(t *testing.T) {
	up := cluster.NodeStatus{Status: cluster.Status{Mode: "standalone", Serving: true}}
	down := cluster.NodeStatus{Err: errors.New("timeout")}
	if !(Redis{}).Ready([]cluster.NodeStatus{up, up, up}) {
		t.Error("three answering masters not ready")
	}
	if (Redis{}).Ready([]cluster.NodeStatus{up, down, up}) || (Redis{}).Ready(nil) {
		t.Error("ready with a server down, or with none")
	}
}
