package recipes

import (
	"slices"
	"strings"
	"testing"
)

// TestNamesFor: each workload lists its own recipes ("" the lock's), and
// an unknown one is refused with the known ones named.
func TestNamesFor(t *testing.T) {
	for w, want := range map[string][]string{"": Names(), WorkloadLock: Names(), WorkloadElection: CandidateNames(), WorkloadConfig: ConfigNames()} {
		got, err := NamesFor(w)
		if err != nil || !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("NamesFor(%q) = %v, %v; want %v", w, got, err, want)
		}
	}
	_, err := NamesFor("elect")
	if err == nil || !strings.Contains(err.Error(), `unknown workload "elect" (known: config, election, lock)`) {
		t.Errorf("NamesFor of an unknown workload: %v", err)
	}
}
