package acl

// Integration tests of the protected lock roots (--acl), the rogue-client
// fault and the run's secrets, on the real ensemble: with the ACL an
// anonymous client can do nothing to the locks and a fenced run stays
// valid; without it the damage is done, recorded and caught by
// grant-overlap; Curator authenticates like the Go workers; and neither
// the ZooKeeper password nor the register's secret ends up in a file of
// the run folder or in ps.

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/resource/register"
)

// rogueRun is a short run with one contended key and a rogue-client every
// two seconds; a holder keeps its lock long enough for the forgery. Its
// 12 s hold four attacks (2 s quiet, 1 s each): enough for the two that
// TestRogueClientWithACL needs, when one finds no holder with a waiter.
// One server (chaostest.OneServer): ACLs are checked by whichever server
// a client talks to.
func rogueRun(name, seed string, extra ...string) []string {
	args := append([]string{"--nemesis", "rogue-client", "--fencing", "on", "--time-limit", "12s",
		"--nemesis-interval", "2s", "--pause", "1s", "--keys", "1", "--workers", "4", "--hold", "300ms",
		"--seed", seed, "--name", name}, chaostest.OneServer()...)
	return append(args, extra...)
}

// rogueOps are the rogue-client operations of a run, completions only.
func rogueOps(t *testing.T, dir string) (starts, ends []chaostest.FaultOp) {
	t.Helper()
	for _, op := range chaostest.FaultOps(t, dir) {
		switch op.F {
		case history.FRogue:
			starts = append(starts, op)
		case history.FRogueEnd:
			ends = append(ends, op)
		}
	}
	return starts, ends
}

// TestRogueClientWithACL: with --acl on (the default) every attempt of
// every rogue-client is refused, the fenced seed run is valid, and the
// secrets the workers receive are nowhere in the run folder or in ps.
func TestRogueClientWithACL(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	cmd, so, se := chaostest.Start(t, append([]string{"run", "--results", results}, rogueRun("rogue-acl-on", "21")...)...)
	secrets, psOut := watchSecrets(t, cmd.Process.Pid)
	code := chaostest.ExitOf(cmd.Wait())
	t.Logf("stdout:\n%s", so.String())
	if code != 0 {
		t.Fatalf("exit %d, want 0 (valid)\nstderr tail: %s", code, chaostest.Tail(se.String(), 3000))
	}
	dir := chaostest.LatestRun(results)
	if dir == "" {
		t.Fatal("the run made no run folder")
	}
	starts, ends := rogueOps(t, dir)
	attacks := 0
	for _, op := range starts {
		t.Logf("rogue: %s %s: %s %s", op.Type, op.Value.Target, op.Value.Detail, op.Err)
		if op.Type == history.Fail {
			continue // no holder with a waiter at that moment: nothing attempted
		}
		attacks++
		if op.Type != history.OK || !op.Verified || op.Value.TargetProcess == nil ||
			!strings.HasPrefix(op.Value.Detail, "anonymous client, 7 attempts: 7 refused, 0 done,") {
			t.Errorf("an attack was not recorded as 7 refused attempts on a holder: %s %+v", op.Type, op.Value)
		}
	}
	if attacks < 2 {
		t.Fatalf("%d rogue-client attacks in 12s, want several", attacks)
	}
	for _, op := range ends {
		if !strings.Contains(op.Value.Detail, "no forged node") || !strings.Contains(op.Value.Detail, "intact") {
			t.Errorf("rogue-end: %s; want nothing forged, key node intact", op.Value.Detail)
		}
	}
	res := chaostest.ReadResults(t, dir)
	if res.Valid != true || res.Checkers["stats"].Ops["acquire"].OK < 10 {
		t.Errorf("valid %v with %d acquisitions; want valid with dozens", res.Valid, res.Checkers["stats"].Ops["acquire"].OK)
	}
	if tj := chaostest.ReadJSON[map[string]any](t, dir, "test.json"); tj["acl"] != "on" {
		t.Errorf("test.json acl = %v, want on", tj["acl"])
	}

	// The secrets: every value found in a worker's environment, in no
	// file of the run and in no ps line taken while the workers ran.
	if len(secrets) != 2 {
		t.Fatalf("found %d secrets in the workers' environment, want the ZooKeeper password and the register secret", len(secrets))
	}
	for _, s := range secrets {
		if strings.Contains(psOut, s) {
			t.Errorf("a secret shows in ps")
		}
	}
	assertNoSecretInFiles(t, dir, secrets)
	chaostest.AssertNothingLeft(t, dir)
}

// watchSecrets finds the run's workers by their controller tag, reads the
// secrets out of their environment (as only root or their owner can),
// and takes ps output while they run.
func watchSecrets(t *testing.T, controller int) (secrets []string, ps string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		secrets = workerSecrets(controller)
		if len(secrets) == 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, args := range [][]string{{"-eo", "pid,args"}, {"auxww"}} {
		out, err := exec.Command("ps", args...).Output()
		if err != nil {
			t.Fatalf("ps %v: %v", args, err)
		}
		ps += string(out)
	}
	if !strings.Contains(ps, "chaos-worker") {
		t.Errorf("ps shows no worker: the scan proves nothing")
	}
	return secrets, ps
}

// workerSecrets are the credential values in the environment of a process
// of the given controller that has both.
func workerSecrets(controller int) []string {
	tagged, err := proc.FindTagged("")
	if err != nil {
		return nil
	}
	for _, p := range tagged {
		if p.Owners.Controller.PID != controller {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/environ")
		if err != nil {
			continue
		}
		var zkPassword, regSecret string
		for _, kv := range bytes.Split(env, []byte{0}) {
			s := string(kv)
			if v, ok := strings.CutPrefix(s, recipes.AuthEnv+"="); ok {
				if a, err := recipes.ParseAuth(v); err == nil && a.Enabled() {
					zkPassword = v[strings.LastIndex(v, ":")+1:]
				}
			} else if v, ok := strings.CutPrefix(s, register.SecretEnv+"="); ok {
				regSecret = v
			}
		}
		if zkPassword != "" && regSecret != "" {
			return []string{zkPassword, regSecret}
		}
	}
	return nil
}

// assertNoSecretInFiles reads every file of the run folder.
func assertNoSecretInFiles(t *testing.T, dir string, secrets []string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("a secret is in %s", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Errorf("only %d files scanned in %s", files, dir)
	}
}

// TestRogueClientWithoutACL: with --acl off the rogue forges a lock node,
// the holder's release answers ok after another worker was granted the
// lock, and a run gated on grant-overlap is invalid, the overlap's holder
// being a process the rogue aimed at.
func TestRogueClientWithoutACL(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	r := chaostest.Run(t, results, append(rogueRun("rogue-acl-off", "22", "--acl", "off", "--gate", "grant-overlap"), chaostest.UntilViolation()...)...)
	t.Logf("stdout:\n%s", r.Stdout)
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1 (invalid)\nstderr tail: %s", r.Code, chaostest.Tail(r.Stderr, 3000))
	}
	starts, ends := rogueOps(t, r.Dir)
	aimed := map[int]bool{}
	forged := 0
	for _, op := range starts {
		t.Logf("rogue: %s %s: %s", op.Type, op.Value.Target, op.Value.Detail)
		if strings.Contains(op.Value.Detail, " refused (") {
			t.Errorf("an attempt was refused without the ACL: %s", op.Value.Detail)
		}
		if op.Value.TargetProcess != nil {
			aimed[*op.Value.TargetProcess] = true
		}
		if strings.Contains(op.Value.Detail, "forge: create a node at the holder's path") &&
			strings.Contains(op.Value.Detail, ": done, deleted") {
			forged++
		}
	}
	if forged == 0 {
		t.Errorf("no forged node was consumed by its holder's release in %d attacks", len(starts))
	}
	for _, op := range ends {
		t.Logf("rogue-end: %s", op.Value.Detail)
	}
	res := chaostest.ReadJSON[overlapResults](t, r.Dir, "results.json")
	overlap := res.Checkers["grant-overlap"]
	if res.Valid != false || overlap.Valid != false || len(overlap.Overlaps) == 0 {
		t.Fatalf("valid %v, grant-overlap %v with %d overlaps; want invalid", res.Valid, overlap.Valid, len(overlap.Overlaps))
	}
	for _, o := range overlap.Overlaps {
		if !aimed[o.Holder] {
			t.Errorf("overlap with holder %d, which no rogue-client aimed at (aimed: %v)", o.Holder, aimed)
		}
	}
	chaostest.AssertNothingLeft(t, r.Dir)
}

// overlapResults is the part of results.json that names grant-overlap's
// overlaps.
type overlapResults struct {
	Valid    any `json:"valid"`
	Checkers map[string]struct {
		Valid    any `json:"valid"`
		Overlaps []struct {
			Holder int `json:"holder"`
		} `json:"overlaps"`
	} `json:"checkers"`
}

// curatorWorkers is how many workers TestCuratorWithACL runs.
const curatorWorkers = 4

// TestCuratorWithACL: the Curator worker authenticates from its
// environment (its creates under the protected keys would be refused
// otherwise) and presents the register's secret (its writes would be
// refused otherwise): acquisitions happen and the fenced run is valid,
// with the rogue refused, and each first worker's log says it authenticated.
// One acquisition and one write are enough to show both: a worker
// without the credential or the secret makes none. It asks no more
// because how many fit in 12 s is the machine's: a quiet one makes
// dozens, and four JVMs beside a loaded suite (load 10, setup 25 s) made
// 4 acquisitions and 3 writes.
func TestCuratorWithACL(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	r := chaostest.Run(t, results, append([]string{"--recipe", "curator", "--nemesis", "rogue-client", "--fencing", "on",
		"--time-limit", "12s", "--nemesis-interval", "2s", "--pause", "1s", "--keys", "2", "--workers", strconv.Itoa(curatorWorkers),
		"--hold", "200ms", "--seed", "23", "--name", "curator-acl"}, chaostest.OneServer()...)...)
	t.Logf("stdout:\n%s", r.Stdout)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0 (valid)\nstderr tail: %s", r.Code, chaostest.Tail(r.Stderr, 3000))
	}
	res := chaostest.ReadResults(t, r.Dir)
	acq := res.Checkers["stats"].Ops["acquire"]
	writes := res.Checkers["stats"].Ops["write"]
	if acq.OK == 0 || writes.OK == 0 {
		t.Errorf("%d acquisitions and %d writes ok; want some of each", acq.OK, writes.OK)
	}
	starts, _ := rogueOps(t, r.Dir)
	for _, op := range starts {
		if op.Type == history.OK && !strings.HasPrefix(op.Value.Detail, "anonymous client, 7 attempts: 7 refused,") {
			t.Errorf("rogue not refused on a Curator lock: %s", op.Value.Detail)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(r.Dir, "workers", "*.log"))
	authenticated := 0
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil && bytes.Contains(b, []byte("authenticating to ZooKeeper as digest:zkchaos")) {
			authenticated++
		}
	}
	// The first workers all started before the workload did; a
	// replacement started near the end may be stopped before it logs.
	if authenticated < curatorWorkers {
		t.Errorf("%d of %d Curator worker logs say they authenticated; want the %d first workers' at least", authenticated, len(logs), curatorWorkers)
	}
	chaostest.AssertNothingLeft(t, r.Dir)
}
