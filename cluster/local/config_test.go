package local

import (
	"strings"
	"testing"
)

// TestFourLetterWhitelist: a generated zoo.cfg allows exactly the
// four-letter words the harness sends, and a list with anything that is
// not a four-letter word is refused before a JVM starts.
func TestFourLetterWhitelist(t *testing.T) {
	c := Config{Nodes: 1, Dir: t.TempDir(), ClassPath: "unused"}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	n := &Node{id: 1, ip: "127.0.0.1", ports: []int{2181, 2888, 3888}}
	cfg := zooCfg(&c, "/data", n, []*Node{n})
	if !strings.Contains(cfg, "\n4lw.commands.whitelist=srvr,cons,mntr\n") {
		t.Errorf("zoo.cfg does not limit the four-letter words to srvr,cons,mntr:\n%s", cfg)
	}
	for _, bad := range [][]string{{"*"}, {"srvr", "mntr,dump"}, {"SRVR"}} {
		c := Config{Nodes: 1, Dir: t.TempDir(), ClassPath: "unused", FourLetterWords: bad}
		if err := c.defaults(); err == nil {
			t.Errorf("FourLetterWords %q accepted", bad)
		}
	}
}

// TestPurgeSettings: a generated zoo.cfg keeps three snapshots and purges
// hourly, so a soak's data dir stays bounded.
func TestPurgeSettings(t *testing.T) {
	c := Config{Nodes: 1, Dir: t.TempDir(), ClassPath: "unused"}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	n := &Node{id: 1, ip: "127.0.0.1", ports: []int{2181, 2888, 3888}}
	cfg := zooCfg(&c, "/data", n, []*Node{n})
	for _, want := range []string{"\nautopurge.snapRetainCount=3\n", "\nautopurge.purgeInterval=1\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("zoo.cfg lacks %q:\n%s", strings.TrimSpace(want), cfg)
		}
	}
}
