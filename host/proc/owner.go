package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Ident names one process for as long as the machine runs: its PID and its
// start time (StartTime). A PID that is reused after its process died
// comes back with a later start time, so an Ident never names the
// stranger that has the number now.
type Ident struct {
	PID int
	// Start is 0 when unknown (records of versions before it, or a
	// process that exited before it was read): the PID alone then
	// decides, so a reused PID keeps a leftover, and a live process is
	// never taken for dead.
	Start uint64
}

// IdentOf names the process that has pid now (Start 0 when it is gone).
func IdentOf(pid int) Ident {
	st, _ := StartTime(pid)
	return Ident{PID: pid, Start: st}
}

// Alive reports whether the process named still runs.
func (i Ident) Alive() bool {
	if i.PID <= 0 || !Alive(i.PID) {
		return false
	}
	if i.Start == 0 {
		return true
	}
	st, err := StartTime(i.PID)
	return err == nil && st == i.Start
}

// Owners are the processes whose life keeps what a run made its own: the
// controller, which made it, and the janitor, which removes it once the
// controller is gone. While either runs, nobody else may touch it; once
// both are gone it is a leftover that any later run or chaos cleanup
// removes.
type Owners struct {
	Controller Ident
	// Janitor is the zero Ident where there is none (a process that is
	// no run's controller, a test's) or it is not known (records of
	// versions before it): the controller alone then decides.
	Janitor Ident
}

// Self is the Owners of what this process makes with no janitor.
func Self() Owners { return ControlledBy(os.Getpid()) }

// ControlledBy is the Owners of what the controller pid makes with no
// janitor.
func ControlledBy(pid int) Owners { return Owners{Controller: IdentOf(pid)} }

// Gone reports whether the controller and the janitor are both gone.
func (o Owners) Gone() bool { return !o.Controller.Alive() && !o.Janitor.Alive() }

// String is the owners as one word, "PID:START,PID:START" (controller,
// janitor; 0 for what is unknown): the value of the run's process tag
// and of its containers' label. ParseOwners reads it back.
func (o Owners) String() string {
	return fmt.Sprintf("%d:%d,%d:%d", o.Controller.PID, o.Controller.Start, o.Janitor.PID, o.Janitor.Start)
}

// ParseOwners reads String's form. What does not parse is left unknown
// (0): a start time unknown judges by the PID alone, a janitor unknown by
// the controller alone (readers fall back to the controller's PID of its
// own record when the controller's part is unknown too).
func ParseOwners(s string) Owners {
	c, j, _ := strings.Cut(s, ",")
	return Owners{Controller: parseIdent(c), Janitor: parseIdent(j)}
}

func parseIdent(s string) Ident {
	p, st, _ := strings.Cut(s, ":")
	pid, err := strconv.Atoi(p)
	if err != nil || pid < 0 {
		return Ident{}
	}
	start, _ := strconv.ParseUint(st, 10, 64)
	return Ident{PID: pid, Start: start}
}
