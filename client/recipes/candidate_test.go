package recipes

import (
	"slices"
	"strings"
	"testing"
)

func TestCandidateNames(t *testing.T) {
	names, err := NamesFor(WorkloadElection)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"seed", "herd", "no-term", "random-token", "callback-done", "no-cancel"} {
		if !slices.Contains(names, want) {
			t.Errorf("election recipes %v lack %s", names, want)
		}
	}
	lock, _ := NamesFor(WorkloadLock)
	for _, only := range []string{"callback-done", "no-cancel"} {
		if slices.Contains(lock, only) {
			t.Errorf("the lock workload offers the election-only %s", only)
		}
	}
}

func TestNewCandidate(t *testing.T) {
	cfg := Config{Servers: []string{"127.0.0.1:1"}, SessionTimeout: testSession}
	for name, want := range map[string]Leader{"callback-done": {TrustCallback: true}, "no-cancel": {KeepWorking: true}} {
		l, leader, err := NewCandidate(name, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if leader != want {
			t.Errorf("%s: leader policy %+v, want %+v", name, leader, want)
		}
		if _, ok := l.(*Seed); !ok {
			t.Errorf("%s: lock %T, want the seed", name, l)
		}
		l.Close()
	}
	if _, _, err := NewCandidate("no-such", cfg); err == nil || !strings.Contains(err.Error(), `unknown election recipe "no-such"`) {
		t.Fatalf("unknown name: %v", err)
	}
	if _, _, err := NewCandidate("callback-done", Config{}); err == nil {
		t.Fatal("a candidate without servers was built")
	}
}
