package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/host/proc"
)

// SlotInfo is what exists of one slot, so cleanup can remove leftovers and
// leave runs in progress alone.
type SlotInfo struct {
	Slot          int
	RunID         string // "" when there is no slot file
	ControllerPID int
	Created       time.Time
	// Alive says the run that owns the slot is still there: its
	// controller or its janitor runs (SlotFile.Alive).
	Alive     bool
	HasFile   bool
	HasBridge bool // the slot's own bridge zkc<s>
	// ExternalBridge is the Docker bridge an attached slot's hosts are on
	// (from the slot file): never removed by a sweep.
	ExternalBridge string
	Namespaces     []string
}

// Leftover reports whether nobody owns the slot any more (see
// SlotFile.Alive). It is a snapshot: a sweep decides again under the
// slot's lock.
func (s SlotInfo) Leftover() bool { return !s.Alive }

// Slots lists every slot of which anything exists: a slot file, a bridge,
// or namespaces (the latter two also without a file, e.g. after a crash
// between creating the bridge and writing the file, or a deleted /run).
func Slots() ([]SlotInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := map[int]*SlotInfo{}
	get := func(s int) *SlotInfo {
		if m[s] == nil {
			m[s] = &SlotInfo{Slot: s}
		}
		return m[s]
	}
	files, err := filepath.Glob(filepath.Join(StateDir, "slot-*.json"))
	if err != nil {
		return nil, fmt.Errorf("list slot files: %w", err)
	}
	for _, f := range files {
		s, ok := slotOfFile(f)
		if !ok {
			continue
		}
		info := get(s)
		info.HasFile = true
		if sf, err := readSlotFile(s); err == nil && sf != nil {
			info.RunID, info.ControllerPID, info.Created = sf.RunID, sf.ControllerPID, sf.Created
			info.Alive = sf.Alive()
			if br, ext := sf.bridge(s); ext {
				info.ExternalBridge = br
			}
		}
	}
	links, err := listLinks(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if s, ok := slotOfName(l); ok && l == bridgeName(s) {
			get(s).HasBridge = true
		}
	}
	nss, err := listNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	for _, ns := range nss {
		if s, ok := slotOfName(ns); ok && ns != bridgeName(s) {
			get(s).Namespaces = append(get(s).Namespaces, ns)
		}
	}
	out := make([]SlotInfo, 0, len(m))
	for _, info := range m {
		out = append(out, *info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot < out[j].Slot })
	return out, nil
}

// sweepLocked removes everything of slot s: processes left in its
// namespaces, the namespaces, veths, the bridge unless it is external, its
// forwarding rules (and the shared chain once unused) and, once all that
// is gone, the slot file. owner is the slot file read under the lock (nil:
// none). The caller holds the slot's lock. It carries on past errors so
// one stuck piece does not leave the rest, and is safe to repeat.
func sweepLocked(ctx context.Context, s int, owner *SlotFile) error {
	var errs []error
	nss, err := listNamespaces(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, removeHosts(ctx, nsOfSlot(nss, s))...)
	links, err := listLinks(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range links {
		if isVethOf(l, s) {
			if err := deleteLink(ctx, l); err != nil {
				errs = append(errs, err)
			}
		}
	}
	br, external := owner.bridge(s)
	if !external {
		if err := deleteLink(ctx, br); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeForward(ctx, br); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		// Keep the file: the slot still names its owner, and stays out of
		// use until a later sweep finishes the job.
		return errors.Join(errs...)
	}
	if err := os.Remove(slotPath(s)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove slot file: %w", err)
	}
	return nil
}

// removeHosts removes namespaces nss (removeHost), all at once: each
// takes a few calls of ip, and a dead run's slot holds a namespace per
// server, worker and register, which the next run's start sweeps.
func removeHosts(ctx context.Context, nss []string) []error {
	errs := make([]error, len(nss))
	var wg sync.WaitGroup
	for i, ns := range nss {
		wg.Go(func() { errs[i] = removeHost(ctx, ns, "") })
	}
	wg.Wait()
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

// removeHost kills the processes in namespace ns, deletes it, and deletes
// the root end of its veth (deleting the namespace would do that too, but
// the kernel does it asynchronously, and a namespace kept alive by a
// process we could not kill would keep the veth).
func removeHost(ctx context.Context, ns, vethRoot string) error {
	var errs []error
	if err := killIn(ctx, ns); err != nil {
		errs = append(errs, err)
	}
	if _, err := run(ctx, "ip", "netns", "del", ns); err != nil && !stderrHas(err, "No such file") {
		errs = append(errs, err)
	}
	if vethRoot != "" {
		if err := deleteLink(ctx, vethRoot); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killIn SIGKILLs every process in namespace ns and waits until they are
// gone, because a namespace with a process in it outlives ip netns del.
func killIn(ctx context.Context, ns string) error {
	out, err := run(ctx, "ip", "netns", "pids", ns)
	if err != nil {
		if stderrHas(err, "No such file") {
			return nil
		}
		return err
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	if len(pids) == 0 {
		return nil
	}
	proc.KillAll(pids)
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		for proc.Alive(p) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("pid %d in namespace %s survived SIGKILL", p, ns)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// deleteLink removes a link that may already be gone. "No such device"
// is the race we met for real: the kernel destroys the root end of a veth
// asynchronously once its namespace is deleted, between ip's lookup of the
// name and its delete request.
func deleteLink(ctx context.Context, name string) error {
	if _, err := run(ctx, "ip", "link", "del", name); err != nil && !stderrHas(err, "Cannot find device", "does not exist", "No such device") {
		return err
	}
	return nil
}

func listNamespaces(ctx context.Context) ([]string, error) {
	out, err := run(ctx, "ip", "netns", "list")
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var nss []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			nss = append(nss, f[0])
		}
	}
	return nss, nil
}

func listLinks(ctx context.Context) ([]string, error) {
	out, err := run(ctx, "ip", "-o", "link", "show")
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var links []string
	for _, l := range strings.Split(out, "\n") {
		// "12: zk0h1@if11: <...>" — the name is the second field up to '@'/':'.
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		name := strings.TrimSuffix(f[1], ":")
		if i := strings.IndexByte(name, '@'); i >= 0 {
			name = name[:i]
		}
		links = append(links, name)
	}
	return links, nil
}

func nsOfSlot(nss []string, s int) []string {
	var out []string
	p := bridgeName(s) + "-"
	for _, ns := range nss {
		if strings.HasPrefix(ns, p) {
			out = append(out, ns)
		}
	}
	return out
}

// isVethOf reports whether link is the root end of a veth of slot s.
func isVethOf(link string, s int) bool {
	rest, ok := strings.CutPrefix(link, fmt.Sprintf("zk%dh", s))
	return ok && isDigits(rest)
}

// slotOfFile parses the slot of a path StateDir/slot-<s>.json.
func slotOfFile(path string) (int, bool) {
	s, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "slot-"), ".json"))
	if err != nil || s < 0 || s >= TotalSlots || filepath.Base(path) != fmt.Sprintf("slot-%d.json", s) {
		return 0, false
	}
	return s, true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
