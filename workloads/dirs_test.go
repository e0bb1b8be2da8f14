package workloads

import (
	"slices"
	"testing"
)

func TestDirsAreTheLeaves(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Settings
		want []string
	}{
		{LockName, Settings{Keys: 2, LockRoot: "/locks/inventory"}, []string{"/locks/inventory/SKU-1", "/locks/inventory/SKU-2"}},
		{"election", Settings{Tasks: 1, Workers: 2}, []string{"/leaders/billing"}},
		{"config", Settings{Admins: 1, Workers: 2}, []string{"/config/app"}},
	} {
		w, err := New(c.name, c.s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Dirs(w); !slices.Equal(got, c.want) {
			t.Errorf("%s: Dirs = %v, want %v", c.name, got, c.want)
		}
	}
}
