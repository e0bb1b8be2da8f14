package subjects

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var flags = Flags{ZK: "127.0.0.1:2181", Register: "http://127.0.0.1:7000", Process: 3,
	SessionTimeout: 3 * time.Second, Token: "czxid", Root: "/locks/inventory"}

// binFolder makes a folder as `make build` leaves bin/: chaos and, when
// withWorker, chaos-worker and chaos-worker-services (empty executables:
// nothing runs them). It returns the chaos binary's path.
func binFolder(t *testing.T, withWorker bool) string {
	t.Helper()
	dir := t.TempDir()
	names := []string{"chaos"}
	if withWorker {
		names = append(names, WorkerBinary, ServicesWorkerBinary)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "chaos")
}

func TestBuiltinRecipe(t *testing.T) {
	exe := binFolder(t, true)
	prog, args, err := Command(exe, "seed", flags)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--zk", "127.0.0.1:2181", "--register", "http://127.0.0.1:7000", "--process", "3",
		"--session-timeout", "3s", "--token", "czxid", "--root", "/locks/inventory", "--recipe", "seed"}
	if prog != filepath.Join(filepath.Dir(exe), "chaos-worker") || !slices.Equal(args, want) {
		t.Errorf("got %s %q", prog, args)
	}
}

// TestBuiltinWorkerMissing: without chaos-worker beside the chaos binary
// (or with one that cannot be executed) a built-in recipe is refused,
// naming the file and how to build it; other subjects do not need it.
// Another service's recipe also needs chaos-worker-services there.
func TestBuiltinWorkerMissing(t *testing.T) {
	exe := binFolder(t, false)
	worker := filepath.Join(filepath.Dir(exe), WorkerBinary)
	check := func(what string) {
		t.Helper()
		_, _, err := Command(exe, "seed", flags)
		if err == nil || !strings.Contains(err.Error(), worker) || !strings.Contains(err.Error(), "make build") {
			t.Errorf("%s: %v, want an error naming %s and make build", what, err, worker)
		}
	}
	check("missing")
	if err := os.WriteFile(worker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	check("not executable")
	if _, _, err := Command(exe, "exec:/bin/true", flags); err != nil {
		t.Errorf("an exec: subject needs no built-in worker: %v", err)
	}
	if err := os.Chmod(worker, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Command(exe, "seed", flags); err != nil {
		t.Errorf("a ZooKeeper recipe needs chaos-worker only: %v", err)
	}
	services := filepath.Join(filepath.Dir(exe), ServicesWorkerBinary)
	redis := Flags{ZK: "127.0.0.1:6379", Register: "http://r", Service: "redis"}
	if _, _, err := Command(exe, "redis-lock", redis); err == nil || !strings.Contains(err.Error(), services) {
		t.Errorf("redis-lock without %s: %v, want an error naming it", ServicesWorkerBinary, err)
	}
}

func TestExec(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "w.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	prog, args, err := Command("/bin/chaos", "exec:"+script+" --fast  -v", flags)
	if err != nil {
		t.Fatal(err)
	}
	if prog != script || !slices.Equal(args[:2], []string{"--fast", "-v"}) || args[2] != "--zk" || slices.Contains(args, "--recipe") {
		t.Errorf("got %s %q", prog, args)
	}
}

func TestInvalid(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"", "no-such-recipe", "exec:", "exec:java", "exec:" + dir, "exec:" + plain, "exec:/no/such/file"} {
		if err := Validate(spec); err == nil {
			t.Errorf("Validate(%q) = nil, want an error", spec)
		}
	}
	for _, spec := range []string{"seed", "curator", "exec:/bin/true"} {
		if err := Validate(spec); err != nil {
			t.Errorf("Validate(%q) = %v", spec, err)
		}
	}
}

// TestCuratorCompiles builds the Java worker into a fresh cache and checks
// the command runs it through java with the protocol flags last.
func TestCuratorCompiles(t *testing.T) {
	if _, err := os.Stat("/usr/share/java/curator-recipes.jar"); err != nil {
		t.Skip("no Curator jars (libcurator-recipes-java)")
	}
	freshCuratorCache(t)
	prog, args, err := Command("/bin/chaos", "curator", flags)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(prog) != "java" || !slices.Contains(args, "CuratorWorker") || args[len(args)-2] != "--root" {
		t.Errorf("got %s %q", prog, args)
	}
	cp := args[slices.Index(args, "-cp")+1]
	if _, err := os.Stat(filepath.Join(strings.Split(cp, ":")[0], "CuratorWorker.class")); err != nil {
		t.Errorf("compiled class not in the cache: %v", err)
	}
}

func TestConfigWorkload(t *testing.T) {
	f := flags
	f.Workload = "config"
	exe := binFolder(t, true)
	prog, args, err := Command(exe, "stale-apply", f)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--zk", "127.0.0.1:2181", "--register", "http://127.0.0.1:7000", "--process", "3",
		"--session-timeout", "3s", "--token", "czxid", "--root", "/locks/inventory", "--workload", "config",
		"--recipe", "stale-apply"}
	if prog != WorkerPath(exe) || !slices.Equal(args, want) {
		t.Errorf("got %s %q", prog, args)
	}
	// exec: subjects are told the workload too.
	_, args, err = Command("/bin/chaos", "exec:/bin/true", f)
	if err != nil || !slices.Contains(args, "--workload") {
		t.Errorf("exec: got %q, %v", args, err)
	}
	for _, spec := range []string{"seed", "stale-apply", "no-rewatch", "blind-cas", "exec:/bin/true"} {
		if err := ValidateFor("config", spec); err != nil {
			t.Errorf("ValidateFor(config, %q) = %v", spec, err)
		}
	}
	for _, c := range [][2]string{{"config", "herd"}, {"config", "curator"}, {"", "stale-apply"}, {"lock", "blind-cas"}, {"election?", "seed"}} {
		if err := ValidateFor(c[0], c[1]); err == nil {
			t.Errorf("ValidateFor(%q, %q) = nil, want an error", c[0], c[1])
		}
	}
}

// TestCuratorElection: curator serves the election workload (LeaderLatch),
// told so by --workload, and still refuses the config workload.
func TestCuratorElection(t *testing.T) {
	if err := ValidateFor("election", Curator); err != nil {
		t.Fatalf("ValidateFor(election, curator) = %v", err)
	}
	if err := ValidateFor("config", Curator); err == nil {
		t.Fatal("ValidateFor(config, curator) = nil, want an error")
	}
	if _, err := os.Stat("/usr/share/java/curator-recipes.jar"); err != nil {
		t.Skip("no Curator jars (libcurator-recipes-java)")
	}
	freshCuratorCache(t)
	f := flags
	f.Workload = "election"
	_, args, err := Command("/bin/chaos", Curator, f)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(args, "--workload"); i < 0 || args[i+1] != "election" {
		t.Errorf("curator election command %q lacks --workload election", args)
	}
	cp := args[slices.Index(args, "-cp")+1]
	if _, err := os.Stat(filepath.Join(strings.Split(cp, ":")[0], "CuratorElection.class")); err != nil {
		t.Errorf("CuratorElection not compiled with the worker: %v", err)
	}
}

// TestCuratorSelector: curator-selector serves the election only
// (LeaderSelector), refusing the lock and config workloads by name; its
// command is the Curator worker told --curator-recipe selector before the
// protocol flags, with CuratorSelector compiled beside the others.
func TestCuratorSelector(t *testing.T) {
	if err := ValidateFor("election", CuratorSelector); err != nil {
		t.Fatalf("ValidateFor(election, curator-selector) = %v", err)
	}
	for _, w := range []string{"", "lock", "config"} {
		err := ValidateFor(w, CuratorSelector)
		if err == nil || !strings.Contains(err.Error(), "serves only the election workload") {
			t.Errorf("ValidateFor(%q, curator-selector) = %v, want it refused as election-only", w, err)
		}
	}
	if !slices.Contains(Names(), CuratorSelector) {
		t.Errorf("Names() %v lacks %s", Names(), CuratorSelector)
	}
	if _, err := os.Stat("/usr/share/java/curator-recipes.jar"); err != nil {
		t.Skip("no Curator jars (libcurator-recipes-java)")
	}
	freshCuratorCache(t)
	f := flags
	f.Workload = "election"
	_, args, err := Command("/bin/chaos", CuratorSelector, f)
	if err != nil {
		t.Fatal(err)
	}
	main, sel, zk := slices.Index(args, "CuratorWorker"), slices.Index(args, "--curator-recipe"), slices.Index(args, "--zk")
	if main < 0 || sel != main+1 || args[sel+1] != "selector" || zk != sel+2 {
		t.Errorf("curator-selector command %q: want CuratorWorker --curator-recipe selector, then the protocol flags", args)
	}
	if i := slices.Index(args, "--workload"); i < 0 || args[i+1] != "election" {
		t.Errorf("curator-selector command %q lacks --workload election", args)
	}
	// curator itself picks no recipe: its main's default.
	_, args, err = Command("/bin/chaos", Curator, f)
	if err != nil || slices.Contains(args, "--curator-recipe") {
		t.Errorf("curator command %q, %v: want no --curator-recipe", args, err)
	}
	cp := args[slices.Index(args, "-cp")+1]
	for _, class := range []string{"CuratorSelector.class", "CuratorCandidate.class", "CuratorElection.class"} {
		if _, err := os.Stat(filepath.Join(strings.Split(cp, ":")[0], class)); err != nil {
			t.Errorf("%s not compiled with the worker: %v", class, err)
		}
	}
}

// freshCuratorCache makes the next Command compile into a cache of the
// test's own (forgetting the compile of an earlier test, whose cache is gone).
func freshCuratorCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	curatorMemo.forget()
}

// TestPostgresFlag: with a PostgreSQL resource the worker gets --postgres
// instead of --register (nothing else changes), and only built-in recipes
// count as able to take it.
func TestPostgresFlag(t *testing.T) {
	f := flags
	f.Register, f.Postgres = "", "postgres://zkchaos@198.18.0.5:5432/postgres?sslmode=disable"
	_, args, err := Command(binFolder(t, true), "seed", f)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--zk", "127.0.0.1:2181", "--postgres", f.Postgres, "--process", "3",
		"--session-timeout", "3s", "--token", "czxid", "--root", "/locks/inventory", "--recipe", "seed"}
	if !slices.Equal(args, want) {
		t.Errorf("got %q", args)
	}
	for spec, want := range map[string]bool{"seed": true, "zk-lock": true, "curator": false, "exec:/bin/true": false, "nonsense": false} {
		if got := Builtin("", spec); got != want {
			t.Errorf("Builtin(%q) = %v, want %v", spec, got, want)
		}
	}
}
