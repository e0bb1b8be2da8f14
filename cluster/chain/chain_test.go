package chain

import (
	"os/exec"
	"slices"
	"testing"
)

func TestIsolate(t *testing.T) {
	script, want, err := Isolate("ZKCHAOS-r1", []string{"198.18.0.3", "198.18.0.4"})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-n", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("script does not parse: %v\n%s", err, out)
	}
	wantRules := []string{"-A ZKCHAOS-r1 -s 198.18.0.3/32 -j DROP", "-A ZKCHAOS-r1 -d 198.18.0.3/32 -j DROP",
		"-A ZKCHAOS-r1 -s 198.18.0.4/32 -j DROP", "-A ZKCHAOS-r1 -d 198.18.0.4/32 -j DROP"}
	if !slices.Equal(want, wantRules) {
		t.Errorf("want %q, got %q", wantRules, want)
	}
	if _, _, err := Isolate("C", []string{"zk2; rm -rf /"}); err == nil {
		t.Error("a peer that is not an IP address accepted")
	}
}

func TestRules(t *testing.T) {
	out := "-P INPUT ACCEPT\n-N ZKCHAOS-r1\n-N ZKCHAOS-r10\n-A INPUT -j ZKCHAOS-r1\n-A ZKCHAOS-r1 -s 10.0.0.2/32 -j DROP\n-A ZKCHAOS-r10 -s 10.0.0.9/32 -j DROP\n"
	got := Rules(out, "ZKCHAOS-r1")
	if !slices.Equal(got, []string{"-A ZKCHAOS-r1 -s 10.0.0.2/32 -j DROP"}) {
		t.Errorf("Rules = %q", got)
	}
}
