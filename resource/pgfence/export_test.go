package pgfence

import "testing"

// TestMergeKeepsEachResourcesOrder: rows of different resources go by
// wall clock, but a resource's own rows stay in counter order even when
// their clocks say otherwise (a clock step back between two commits).
func TestMergeKeepsEachResourcesOrder(t *testing.T) {
	rows := []auditRow{
		{key: "a", n: 1, wall: 10}, {key: "a", n: 2, wall: 5}, {key: "a", n: 3, wall: 30},
		{key: "b", n: 1, wall: 7}, {key: "b", n: 2, wall: 20},
	}
	var got []string
	for _, r := range merge(rows) {
		got = append(got, r.key+string(rune('0'+r.n)))
	}
	want := []string{"b1", "a1", "a2", "b2", "a3"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
