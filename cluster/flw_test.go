package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The testdata answers were captured from a real 3-server ensemble
// (ZooKeeper 3.8.0, Debian's libzookeeper-java) during a chaos run with
// pause-zk-majority: cons with four workers connected, and the leader
// left without its quorum ("not serving").
func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseConsOfARealServer(t *testing.T) {
	got, err := ParseCons(readTestdata(t, "cons.txt"))
	want := []string{"0x20000093a330000", "0x20000093a330001", "0x20000093a330002", "0x20000093a330003"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseCons = %v, %v; want %v", got, err, want)
	}
	if _, err := ParseCons(readTestdata(t, "cons-not-serving.txt")); !errors.Is(err, ErrNotServing) {
		t.Errorf("not serving: err %v, want ErrNotServing", err)
	}
	// Only the asking connection: a list, of no session.
	if got, err := ParseCons(" /198.18.0.1:43854[0](queued=0,recved=1,sent=0)\n\n"); err != nil || len(got) != 0 {
		t.Errorf("cons of the asker alone = %v, %v; want an empty list", got, err)
	}
	for _, bad := range []string{"", "cons is not executed because it is not in the whitelist.\n", " /1.2.3.4:5[1](queued=0,sid=zz)\n"} {
		if s, err := ParseCons(bad); err == nil {
			t.Errorf("ParseCons(%q) = %v, want an error", bad, s)
		}
	}
}
