package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/resource/register"
)

// TestRegisterNeedsASecret: `chaos register` does not start without the
// run's secret in its environment (it would answer anyone).
func TestRegisterNeedsASecret(t *testing.T) {
	t.Setenv(register.SecretEnv, "")
	var stdout, stderr bytes.Buffer
	code := runRegister(context.Background(), []string{"--log", t.TempDir() + "/apply.log"}, &stdout, &stderr)
	if code != 255 || !strings.Contains(stderr.String(), register.SecretEnv) || stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 255 naming %s and no address", code, stdout.String(), stderr.String(), register.SecretEnv)
	}
}

// TestACLFlag: --acl is on by default and takes on or off only.
func TestACLFlag(t *testing.T) {
	cfg, err := parseRunFlags(nil, io.Discard)
	if err != nil || cfg.ACL != "on" {
		t.Errorf("default --acl %q (%v), want on", cfg.ACL, err)
	}
	if cfg, err := parseRunFlags([]string{"--acl", "off"}, io.Discard); err != nil || cfg.ACL != "off" {
		t.Errorf("--acl off: %q, %v", cfg.ACL, err)
	}
	if _, err := parseRunFlags([]string{"--acl", "maybe"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--acl") {
		t.Errorf("--acl maybe: %v, want an error naming --acl", err)
	}
}
