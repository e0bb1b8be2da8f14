package workercmd

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/client/recipes"
	_ "github.com/zkchaos/zkchaos/client/recipes/leased" // the etcd and Redis cases
)

// runWorker is the worker with args and an empty stdin: every case here
// is refused before it connects anywhere.
func runWorker(args ...string) (int, string) {
	var stderr bytes.Buffer
	code := Command(context.Background(), args, strings.NewReader(""), io.Discard, &stderr)
	return code, stderr.String()
}

// TestFlags: the protocol's flags with one dash or two (Go's flag
// package, as chaos's command line reads them), the defaults a run leaves
// out, and another service's first recipe when --recipe is not given.
func TestFlags(t *testing.T) {
	cfg, code, ok := parse([]string{"-zk", "127.0.0.1:2181", "--register=http://127.0.0.1:7000", "--process", "4"}, io.Discard)
	if !ok || code != 0 {
		t.Fatalf("refused (%d)", code)
	}
	if !slices.Equal(cfg.ZK, []string{"127.0.0.1:2181"}) || cfg.Register != "http://127.0.0.1:7000" || cfg.Process != 4 ||
		cfg.Recipe != "seed" || cfg.Workload != recipes.WorkloadLock || cfg.Token != recipes.TokenCzxid || cfg.Root != recipes.DefaultRoot {
		t.Errorf("config %+v", cfg)
	}
	cfg, _, ok = parse([]string{"--service", "etcd", "--servers", "127.0.0.1:2379", "--register", "http://r:1"}, io.Discard)
	if names, _ := recipes.NamesForService("etcd"); !ok || cfg.Recipe != names[0] {
		t.Errorf("etcd without --recipe: %q (ok %v), want %q", cfg.Recipe, ok, names[0])
	}
}

// TestHelpAndMistakes: -h prints the flags and exits 0; a mistake is one
// line naming it, worded as chaos words its own, and a pointer to -h.
func TestHelpAndMistakes(t *testing.T) {
	code, stderr := runWorker("-h")
	if code != 0 || !strings.Contains(stderr, "  -zk string") {
		t.Errorf("-h: exit %d, stderr %q", code, stderr)
	}
	for args, want := range map[string]string{
		"--no-such-flag":                "chaos-worker: flag provided but not defined: -no-such-flag",
		"--zk 127.0.0.1:1 --process x":  `chaos-worker: invalid value "x" for flag -process: parse error`,
		"--zk 127.0.0.1:1 --register":   "chaos-worker: flag needs an argument: -register",
		"--zk 127.0.0.1:1 --register r": `chaos-worker: --register must be an http(s) URL, got "r"`,
		"--zk 127.0.0.1:1 extra":        `chaos-worker: unexpected arguments ["extra"]`,
	} {
		code, stderr := runWorker(strings.Fields(args)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 255 || len(lines) != 2 || lines[0] != want || lines[1] != "chaos-worker: see 'chaos-worker -h' for the flags" {
			t.Errorf("%s: exit %d, stderr %q; want 255 and %q", args, code, stderr, want)
		}
	}
}

// TestWorkerRefusesABadCredential: a malformed ZKCHAOS_ZK_AUTH stops the
// worker before it connects (exit 255), and the message names the
// variable without repeating its value.
func TestWorkerRefusesABadCredential(t *testing.T) {
	t.Setenv(recipes.AuthEnv, "digest:only-a-user-secretpart")
	code, stderr := runWorker("--zk", "127.0.0.1:1", "--register", "http://127.0.0.1:1")
	if code != 255 || !strings.Contains(stderr, recipes.AuthEnv) {
		t.Errorf("exit %d, stderr %q; want 255 naming %s", code, stderr, recipes.AuthEnv)
	}
	if strings.Contains(stderr, "secretpart") {
		t.Errorf("the error repeats the credential: %q", stderr)
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
		code, stderr := runWorker(append([]string{"--zk", "127.0.0.1:1"}, c.args...)...)
		if code != 255 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 255 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestWorkerServers: a ZooKeeper worker takes --zk, another service's
// --servers with --service; each refuses the other's flag, and another
// service serves the lock workload only.
func TestWorkerServers(t *testing.T) {
	for _, tc := range []struct {
		service, zk, servers, workload string
		want                           string // "" for accepted; else part of the message
		recipe                         string
	}{
		{"zookeeper", "127.0.0.1:2181", "", "lock", "", "seed"},
		{"redis", "", "127.0.0.1:6379,127.0.0.1:6380", "lock", "", "redis-lock"},
		{"etcd", "", "127.0.0.1:2379", "lock", "", "etcd-mutex"},
		{"zookeeper", "127.0.0.1:2181", "127.0.0.1:6379", "lock", "--servers is for --service redis|etcd", ""},
		{"redis", "127.0.0.1:2181", "127.0.0.1:6379", "lock", "--zk is ZooKeeper's", ""},
		{"redis", "", "", "lock", "--servers: required", ""},
		{"etcd", "", "127.0.0.1:2379", "config", "serves the lock workload only", ""},
		{"memcached", "", "127.0.0.1:1", "lock", `unknown service "memcached"`, ""},
	} {
		addrs, names, msg := workerServers(tc.service, tc.zk, tc.servers, tc.workload)
		switch {
		case tc.want == "" && msg != "":
			t.Errorf("%+v refused: %s", tc, msg)
		case tc.want != "" && !strings.Contains(msg, tc.want):
			t.Errorf("%+v: %q, want %q", tc, msg, tc.want)
		case tc.want == "" && (len(addrs) == 0 || !slices.Contains(names, tc.recipe)):
			t.Errorf("%+v: addrs %v, recipes %v", tc, addrs, names)
		}
	}
}
