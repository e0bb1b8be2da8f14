package netns

// Slot ownership: a slot belongs to exactly one run from its claim to its
// release, and only its own run, or anyone once that run's controller is
// dead, may remove it.
//
// The protocol (docs/architecture.md, "`host/`", has the reasoning):
//   - Every claim and every sweep of slot s happens under an exclusive
//     flock on StateDir/slot-<s>.lock. A claim only tries the lock (busy:
//     the next slot); a sweep waits for it.
//   - A claim requires the slot to be empty (no slot file, no bridge, veth
//     or namespace of the slot), then writes the slot file naming the owner
//     (run id, controller PID and the controller's start time), and only
//     then creates the bridge and sets it up, all before unlocking: no one
//     ever sees a slot of a live claim without its owner.
//   - A sweep re-reads the slot file under the lock and lets a rule decide
//     from the owner recorded there: a run's own Close and its janitor
//     sweep only a slot that names their run; chaos cleanup and the start
//     of every run only a slot whose controller and janitor are both gone
//     or that names no owner. The slot file goes last,
//     and only once everything else is gone, so a sweep that fails half way
//     leaves a slot that still names its (dead) owner.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/zkchaos/zkchaos/host/proc"
)

// SlotFile is what StateDir/slot-<s>.json records: who owns the slot, so
// that a sweep can tell its own run's slot from another's, and a leftover
// (controller dead) from a run in progress.
type SlotFile struct {
	RunID         string `json:"run_id"`
	ControllerPID int    `json:"controller_pid"`
	// ControllerStart is the controller's start time (proc.StartTime):
	// with the PID it still names the controller after the PID is reused.
	// 0 in slot files of versions before it.
	ControllerStart uint64 `json:"controller_start,omitempty"`
	// JanitorPID and JanitorStart name the run's janitor, which sweeps
	// the slot once the controller is gone: until it is gone too, the
	// slot is still its run's. 0 in slot files of versions before it,
	// and of networks made without a janitor.
	JanitorPID   int       `json:"janitor_pid,omitempty"`
	JanitorStart uint64    `json:"janitor_start,omitempty"`
	Created      time.Time `json:"created"`
	// Bridge is the bridge the slot's hosts are on when it is not the
	// slot's own zkc<s>; ExternalBridge says someone else (the Docker
	// engine) made it and owns it, so no sweep, even one long after the
	// controller died, ever deletes it.
	Bridge         string `json:"bridge,omitempty"`
	ExternalBridge bool   `json:"external_bridge,omitempty"`
}

// bridge is the slot's bridge and whether it is someone else's. A slot
// without a file, or a Docker slot whatever its file says, is never taken
// for the owner of a bridge it could delete.
func (f *SlotFile) bridge(s int) (name string, external bool) {
	if f != nil && f.Bridge != "" {
		return f.Bridge, f.ExternalBridge || s >= MaxSlots
	}
	return bridgeName(s), s >= MaxSlots
}

// Owners are the processes the slot file names.
func (f *SlotFile) Owners() proc.Owners {
	if f == nil {
		return proc.Owners{}
	}
	return proc.Owners{
		Controller: proc.Ident{PID: f.ControllerPID, Start: f.ControllerStart},
		Janitor:    proc.Ident{PID: f.JanitorPID, Start: f.JanitorStart},
	}
}

// Alive reports whether the run that owns the slot is still there: its
// controller or its janitor runs (proc.Owners). A slot whose controller
// died is its janitor's to sweep while the janitor lives.
func (f *SlotFile) Alive() bool { return !f.Owners().Gone() }

// sameOwner reports whether two slot files name the same run of the same
// controller process.
func sameOwner(a, b *SlotFile) bool {
	return a != nil && b != nil && a.RunID == b.RunID &&
		a.ControllerPID == b.ControllerPID && a.ControllerStart == b.ControllerStart
}

// newOwner is the slot file of a run owned by o. The controller's start
// time is required: without it a slot outlives its run whenever the PID
// is reused.
func newOwner(runID string, o proc.Owners) (SlotFile, error) {
	if runID == "" {
		return SlotFile{}, errors.New("claim a network slot: empty run id")
	}
	if o.Controller.Start == 0 {
		st, err := proc.StartTime(o.Controller.PID)
		if err != nil {
			return SlotFile{}, fmt.Errorf("claim a network slot: controller: %w", err)
		}
		o.Controller.Start = st
	}
	return SlotFile{RunID: runID, ControllerPID: o.Controller.PID, ControllerStart: o.Controller.Start,
		JanitorPID: o.Janitor.PID, JanitorStart: o.Janitor.Start, Created: time.Now().UTC()}, nil
}

// SweepRule decides, under the slot's lock, whether a sweep may remove a
// slot, from the owner its slot file names (nil: the slot has no file).
type SweepRule func(owner *SlotFile) bool

// OwnedBy allows only the slot of run runID: what a run's janitor sweeps.
func OwnedBy(runID string) SweepRule {
	return func(o *SlotFile) bool { return o != nil && o.RunID != "" && o.RunID == runID }
}

// Abandoned allows a slot whose controller and janitor are both gone, or
// that names no owner (an older version's leftover: under the lock, a slot
// of a live claim always has its file). What chaos cleanup and the start
// of every run sweep.
func Abandoned(o *SlotFile) bool { return o == nil || !o.Alive() }

// AnyOwner allows every slot, live runs' too: chaos cleanup --all.
func AnyOwner(*SlotFile) bool { return true }

// SweepSlot removes everything of slot s (processes left in its
// namespaces, the namespaces, veths, bridge, forwarding rules and the slot
// file) if rule allows it for the owner the slot file names. An external
// bridge (Attach) stays: only what the run made goes. It waits for
// the slot's lock (a claim or another sweep in progress) until ctx ends.
// It returns the owner it read and whether it swept; safe to repeat.
func SweepSlot(ctx context.Context, s int, rule SweepRule) (owner *SlotFile, swept bool, err error) {
	if s < 0 || s >= TotalSlots {
		return nil, false, fmt.Errorf("sweep slot %d: out of range 0..%d", s, TotalSlots-1)
	}
	unlock, _, err := lockSlot(ctx, s, true)
	if err != nil {
		return nil, false, fmt.Errorf("sweep slot %d: %w", s, err)
	}
	defer unlock()
	return sweepSlotLocked(ctx, s, rule)
}

// sweepSlotLocked is SweepSlot for a caller that holds slot s's lock.
func sweepSlotLocked(ctx context.Context, s int, rule SweepRule) (owner *SlotFile, swept bool, err error) {
	owner, err = readSlotFile(s)
	if err != nil {
		return nil, false, fmt.Errorf("sweep slot %d: %w", s, err)
	}
	if !rule(owner) {
		return owner, false, nil
	}
	if owner == nil {
		// Nothing of it left (another sweep took it since the caller
		// looked): nothing to remove, and nothing to report.
		if empty, err := slotEmpty(ctx, s); err == nil && empty {
			return nil, false, nil
		}
	}
	if err := sweepLocked(ctx, s, owner); err != nil {
		return owner, false, fmt.Errorf("sweep slot %d: %w", s, err)
	}
	return owner, true, nil
}

// InspectSlot calls look with what exists of slot s, under the slot's
// lock (waiting for it until ctx ends): no claim or sweep is half done
// while look runs, so a bridge, namespace or forwarding rule of a slot
// without a slot file is a leftover, never a run being set up or torn
// down.
func InspectSlot(ctx context.Context, s int, look func(SlotInfo) error) error {
	unlock, _, err := lockSlot(ctx, s, true)
	if err != nil {
		return fmt.Errorf("inspect slot %d: %w", s, err)
	}
	defer unlock()
	slots, err := Slots()
	if err != nil {
		return fmt.Errorf("inspect slot %d: %w", s, err)
	}
	info := SlotInfo{Slot: s}
	for _, i := range slots {
		if i.Slot == s {
			info = i
		}
	}
	return look(info)
}

// ReleaseRun sweeps every slot whose slot file names runID: what a janitor
// does once its controller is gone. It finds the slots by their files, so
// it needs no word from the controller (which may have died before it
// could tell), and it leaves alone a slot its run released and another run
// claimed since.
func ReleaseRun(ctx context.Context, runID string) (swept []int, err error) {
	files, err := filepath.Glob(filepath.Join(StateDir, "slot-*.json"))
	if err != nil {
		return nil, fmt.Errorf("list slot files: %w", err)
	}
	var errs []error
	for _, f := range files {
		s, ok := slotOfFile(f)
		if !ok {
			continue
		}
		if o, err := readSlotFile(s); err != nil || !OwnedBy(runID)(o) {
			continue // not ours (re-checked under the lock anyway)
		}
		_, ok, err := SweepSlot(ctx, s, OwnedBy(runID))
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			swept = append(swept, s)
		}
	}
	return swept, errors.Join(errs...)
}

// claim takes slot s for owner if nobody holds its lock and nothing of it
// exists, and sets it up; nil, nil means the slot is not free. The owner
// is written before anything is created and the lock is held to the end
// of setup, so whenever the lock is free, a slot with a bridge, veth or
// namespace has a slot file naming who made it, and a controller that dies
// at any point of its claim leaves a slot that names it (dead: cleanup's).
func claim(ctx context.Context, s int, owner SlotFile) (*Network, error) {
	unlock, ok, err := lockSlot(ctx, s, false)
	if err != nil || !ok {
		return nil, err
	}
	defer unlock()
	if empty, err := slotEmpty(ctx, s); err != nil || !empty {
		return nil, err
	}
	if err := writeSlotFile(s, owner); err != nil {
		return nil, err
	}
	br := bridgeName(s)
	if _, err := run(ctx, "ip", "link", "add", br, "type", "bridge"); err != nil {
		// Nothing of ours exists yet but the file.
		if rerr := os.Remove(slotPath(s)); rerr != nil {
			return nil, errors.Join(fmt.Errorf("create bridge for slot %d: %w", s, err), rerr)
		}
		if stderrHas(err, "File exists") {
			return nil, nil // made outside the protocol (an older version) since our check
		}
		return nil, fmt.Errorf("create bridge for slot %d: %w", s, err)
	}
	n := makeNetwork(s, br, owner)
	if err := n.setup(ctx); err != nil {
		if cerr := sweepLocked(context.WithoutCancel(ctx), s, &owner); cerr != nil {
			err = errors.Join(err, fmt.Errorf("clean up slot %d: %w", s, cerr))
		}
		return nil, fmt.Errorf("set up slot %d: %w", s, err)
	}
	return n, nil
}

// slotEmpty reports whether nothing of slot s exists: no slot file, no
// bridge, no veth, no namespace. Leftovers keep a slot out of use until
// chaos cleanup removes them, because their names would collide.
func slotEmpty(ctx context.Context, s int) (bool, error) {
	if _, err := os.Lstat(slotPath(s)); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("slot %d: %w", s, err)
	}
	links, err := listLinks(ctx)
	if err != nil {
		return false, err
	}
	for _, l := range links {
		if l == bridgeName(s) || isVethOf(l, s) {
			return false, nil
		}
	}
	nss, err := listNamespaces(ctx)
	if err != nil {
		return false, err
	}
	return len(nsOfSlot(nss, s)) == 0, nil
}

// readSlotFile reads slot s's owner; nil, nil when there is no file. A
// file that does not parse names no live owner (an empty SlotFile).
func readSlotFile(s int) (*SlotFile, error) {
	b, err := os.ReadFile(slotPath(s))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read slot file: %w", err)
	}
	var f SlotFile
	if json.Unmarshal(b, &f) != nil {
		return &SlotFile{}, nil
	}
	return &f, nil
}

// writeSlotFile writes slot s's owner through a temporary file renamed
// over it, so a reader never sees half an owner. Only the holder of the
// slot's lock writes, so the temporary name needs no uniqueness.
func writeSlotFile(s int, owner SlotFile) error {
	b, err := json.Marshal(owner)
	if err != nil {
		return fmt.Errorf("encode slot file: %w", err)
	}
	tmp := slotPath(s) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write slot file: %w", err)
	}
	if err := os.Rename(tmp, slotPath(s)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write slot file: %w", err)
	}
	return nil
}

func slotLockPath(s int) string { return filepath.Join(StateDir, fmt.Sprintf("slot-%d.lock", s)) }

// lockSlot takes slot s's lock; see lockFile.
func lockSlot(ctx context.Context, s int, wait bool) (unlock func(), ok bool, err error) {
	return lockFile(ctx, slotLockPath(s), wait)
}

// lockFile takes an exclusive flock on path, creating it if needed. With
// wait it polls until it has the lock or ctx ends (a blocking flock could
// not be cancelled); without, ok is false at once when another holds it.
// The kernel drops the lock when its holder dies, so a crash never leaves
// a slot locked. Lock files are never deleted: deleting a lock file that
// others may hold or be opening splits the lock in two.
func lockFile(ctx context.Context, path string, wait bool) (unlock func(), ok bool, err error) {
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return nil, false, fmt.Errorf("create %s: %w", StateDir, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	delay := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return func() { f.Close() }, true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			f.Close()
			return nil, false, fmt.Errorf("lock %s: %w", path, err)
		case !wait:
			f.Close()
			return nil, false, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, false, fmt.Errorf("lock %s: %w", path, context.Cause(ctx))
		case <-time.After(delay):
		}
		delay = min(2*delay, 20*time.Millisecond)
	}
}
