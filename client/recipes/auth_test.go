package recipes

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestAuthNeverShowsThePassword: an Auth printed any way, logged, or put
// in an error says scheme and user only; its Env entry is the one place
// the password is, and it parses back to the same credential.
func TestAuthNeverShowsThePassword(t *testing.T) {
	const pw = "s3cr3t-pw-0123456789"
	a, err := ParseAuth("digest:zkchaos:" + pw)
	if err != nil || !a.Enabled() || a.User() != "zkchaos" {
		t.Fatalf("ParseAuth: %v %v", a, err)
	}
	var logBuf bytes.Buffer
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("x", "auth", a)
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("x", "auth", a)
	for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%v %+v %#v %s", a, a, a, a), logBuf.String(),
		fmt.Errorf("w: %v", a).Error(), fmt.Sprint(Config{Auth: a})} {
		if strings.Contains(s, pw) {
			t.Errorf("password shown: %s", s)
		}
	}
	if b, err := ParseAuth(strings.TrimPrefix(a.Env(), AuthEnv+"=")); err != nil || b != a {
		t.Errorf("Env does not round-trip: %v %v", b, err)
	}
	for _, bad := range []string{"digest", "digest:user", "digest::pw", "digest:user:", "sasl:user:pw", "user:pw"} {
		_, err := ParseAuth(bad)
		if err == nil {
			t.Errorf("ParseAuth(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "pw") && strings.Contains(bad, "pw") {
			t.Errorf("ParseAuth(%q) repeats the value: %v", bad, err)
		}
	}
	if none, err := ParseAuth(""); err != nil || none.Enabled() {
		t.Errorf("ParseAuth(\"\") = %v, %v; want no credential", none, err)
	}
}

// TestAuthACL: without a credential nodes stay world-writable (--acl
// off); with one, the creator has all rights and the world may only read.
func TestAuthACL(t *testing.T) {
	if got := (Auth{}).ACL(); len(got) != 1 || got[0] != zk.WorldACL(zk.PermAll)[0] {
		t.Errorf("no credential: %v", got)
	}
	a, _ := NewDigestAuth("u", "p")
	want := []zk.ACL{{Perms: zk.PermAll, Scheme: "auth", ID: ""}, {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}
	if got := a.ACL(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ACL %v, want %v", got, want)
	}
	if st := a.StoredACL(); st[0].Scheme != "digest" || !strings.HasPrefix(st[0].ID, "u:") || st[1] != want[1] {
		t.Errorf("StoredACL %v", st)
	}
}
