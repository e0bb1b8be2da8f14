package proc

import (
	"os"
	"os/exec"
	"testing"
)

// exitedPID is the PID of a process that has exited and been reaped.
func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestOwnersGone: a run's things are a leftover only when its controller
// and its janitor are both gone; a PID whose start time differs is
// another process (gone), and one recorded without a start time is
// judged by the PID alone.
func TestOwnersGone(t *testing.T) {
	me := IdentOf(os.Getpid())
	if me.Start == 0 {
		t.Fatal("no start time for this process")
	}
	dead := Ident{PID: exitedPID(t), Start: 1}
	reused := Ident{PID: me.PID, Start: me.Start + 1}
	for _, c := range []struct {
		name string
		o    Owners
		gone bool
	}{
		{"controller alive", Owners{Controller: me}, false},
		{"controller dead, janitor alive", Owners{Controller: dead, Janitor: me}, false},
		{"controller alive, janitor dead", Owners{Controller: me, Janitor: dead}, false},
		{"both dead", Owners{Controller: dead, Janitor: dead}, true},
		{"controller dead, no janitor", Owners{Controller: dead}, true},
		{"controller's PID reused", Owners{Controller: reused}, true},
		{"janitor's PID reused", Owners{Controller: dead, Janitor: reused}, true},
		{"no start time, PID alive", Owners{Controller: Ident{PID: me.PID}}, false},
		{"nothing known", Owners{}, true},
	} {
		if got := c.o.Gone(); got != c.gone {
			t.Errorf("%s: Gone() = %v, want %v", c.name, got, c.gone)
		}
	}
}

// TestOwnersText: the tag's and the labels' form reads back, and what
// does not parse is unknown, never a live owner taken for another.
func TestOwnersText(t *testing.T) {
	o := Owners{Controller: Ident{PID: 12, Start: 34}, Janitor: Ident{PID: 56, Start: 78}}
	if s := o.String(); s != "12:34,56:78" || ParseOwners(s) != o {
		t.Errorf("%v: String %q reads back as %v", o, s, ParseOwners(s))
	}
	for s, want := range map[string]Owners{
		"":         {},
		"12":       {Controller: Ident{PID: 12}},
		"12:x,y":   {Controller: Ident{PID: 12}},
		"-3:1,4:5": {Janitor: Ident{PID: 4, Start: 5}},
	} {
		if got := ParseOwners(s); got != want {
			t.Errorf("ParseOwners(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestFindTaggedReadsOwners: a process's tag names its owners; a tag of
// a version before the owners, or whose owners do not parse, names the
// controller's PID alone.
func TestFindTaggedReadsOwners(t *testing.T) {
	owners := Owners{Controller: IdentOf(os.Getpid()), Janitor: Ident{PID: 7, Start: 8}}
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), Env("proc-test-owners", owners)...)
	old := exec.Command("sleep", "60")
	old.Env = append(os.Environ(), EnvRun+"=proc-test-owners-old", EnvController+"=42")
	bad := exec.Command("sleep", "60")
	bad.Env = append(os.Environ(), EnvRun+"=proc-test-owners-bad", EnvController+"=43", EnvOwners+"=garbage")
	for _, c := range []*exec.Cmd{cmd, old, bad} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	for run, want := range map[string]Owners{"proc-test-owners": owners, "proc-test-owners-old": {Controller: Ident{PID: 42}},
		"proc-test-owners-bad": {Controller: Ident{PID: 43}}} {
		ts, err := FindTagged(run)
		if err != nil || len(ts) != 1 || ts[0].Owners != want {
			t.Errorf("FindTagged(%q) = %+v, %v; want one process owned by %v", run, ts, err, want)
		}
	}
}
