package history

import "testing"

// TestConfigData: the config data format and digest, with the values
// docs/worker-protocol.md gives.
func TestConfigData(t *testing.T) {
	if got := string(ConfigData(-17)); got != "n=-17\n" {
		t.Fatalf("ConfigData(-17) = %q", got)
	}
	for _, bad := range []string{"", "n=", "n=1", "n=x\n", "m=1\n", "n=1\nx"} {
		if _, ok := ParseConfigData([]byte(bad)); ok {
			t.Errorf("ParseConfigData(%q) ok", bad)
		}
	}
	if n, ok := ParseConfigData(ConfigData(42)); !ok || n != 42 {
		t.Fatalf("round trip: %d %v", n, ok)
	}
	// The values docs/worker-protocol.md gives (printf 'n=0\n' | sha256sum).
	if d := ConfigDigest(ConfigData(0)); d != "3574b3ebe3573588" {
		t.Fatalf("digest of version 0 data = %q", d)
	}
	if d := ConfigDigest(ConfigData(17)); d != "dd163237d55eb8e5" {
		t.Fatalf("digest of n=17 = %q", d)
	}
	// printf 'n=1\n' | sha256sum | cut -c1-16
	if d := ConfigDigest(ConfigData(1)); d != "097fda1929fc1bf1" {
		t.Fatalf("digest of n=1 = %q", d)
	}
	if d := ConfigDigest([]byte("abc")); d != "ba7816bf8f01cfea" {
		t.Fatalf("digest of abc = %s, want ba7816bf8f01cfea (sha256 prefix)", d)
	}
}
