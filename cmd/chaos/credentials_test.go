package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/resource/register"
)

// TestWorkerRefusesABadCredential: a malformed ZKCHAOS_ZK_AUTH stops the
// worker before it connects (exit 255), and the message names the
// variable without repeating its value.
func TestWorkerRefusesABadCredential(t *testing.T) {
	t.Setenv(recipes.AuthEnv, "digest:only-a-user-secretpart")
	var stderr bytes.Buffer
	code := runWorker(context.Background(), []string{"--zk", "127.0.0.1:1", "--register", "http://127.0.0.1:1"},
		strings.NewReader(""), io.Discard, &stderr)
	if code != 255 || !strings.Contains(stderr.String(), recipes.AuthEnv) {
		t.Errorf("exit %d, stderr %q; want 255 naming %s", code, stderr.String(), recipes.AuthEnv)
	}
	if strings.Contains(stderr.String(), "secretpart") {
		t.Errorf("the error repeats the credential: %q", stderr.String())
	}
}

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

// TestWorkerPostgresFlag: --postgres stands instead of --register, for
// the lock workload, with a DSN pgx can parse; each misuse is refused
// before the worker connects anywhere.
func TestWorkerPostgresFlag(t *testing.T) {
	dsn := "postgres://zkchaos@127.0.0.1:1/postgres?sslmode=disable"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--postgres", dsn, "--register", "http://127.0.0.1:1"}, "--postgres and --register: give one"},
		{[]string{"--postgres", dsn, "--workload", "config", "--recipe", "seed"}, "--postgres: only the lock workload"},
		{[]string{"--postgres", "postgres://%zz"}, "--postgres: postgres DSN"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		code := runWorker(context.Background(), append([]string{"--zk", "127.0.0.1:1"}, c.args...), strings.NewReader(""), io.Discard, &stderr)
		if code != 255 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 255 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
