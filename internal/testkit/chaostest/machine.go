package chaostest

// The machine lock. Test packages run in parallel, each in its own process
// (go test -p, GOMAXPROCS), so the lock is a flock on a well-known file:
// ensemble tests hold it shared, a test that needs the machine alone holds
// it exclusively. A plain reader-writer flock lets readers starve a writer
// (Linux grants a shared flock whenever no exclusive one is held, whoever
// waits), and another package starts its next test at once, so every taker
// first passes a gate, held exclusively only while it takes the lock: once
// a writer waits at the lock holding the gate, later readers queue behind
// it. The files are not /tmp/zkchaos-real.lock, which CI and developers
// hold around the whole of go test: taking that one inside would deadlock.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// machineDir holds the lock files; unit tests point it at a folder of
// their own so that they do not contend with real test packages.
var machineDir = os.TempDir()

const (
	machineGate = "zkchaos-machine.gate"
	machineLock = "zkchaos-machine.lock"
)

type lockMode int

const (
	shared    lockMode = syscall.LOCK_SH
	exclusive lockMode = syscall.LOCK_EX
)

// held is this process's shared hold. A subtest of a test that holds the
// lock shares its parent's hold (counted): taking it again through the
// gate could wait behind a writer that waits for the parent, forever.
var held struct {
	sync.Mutex
	n int
	f *os.File
}

// holdMachine takes the machine lock in mode until t ends.
func holdMachine(t *testing.T, mode lockMode) {
	t.Helper()
	held.Lock()
	defer held.Unlock()
	if mode == exclusive && held.n > 0 {
		t.Fatal("the machine alone asked for inside a test that holds it shared")
	}
	if mode == shared && held.n > 0 {
		held.n++
		t.Cleanup(releaseShared)
		return
	}
	start := time.Now()
	f, err := takeMachine(mode)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Logf("waited %s for the machine lock (%s)", waited.Round(time.Second), modeName(mode))
	}
	if mode == exclusive {
		t.Cleanup(func() { f.Close() })
		return
	}
	held.n, held.f = 1, f
	t.Cleanup(releaseShared)
}

func releaseShared() {
	held.Lock()
	defer held.Unlock()
	held.n--
	if held.n == 0 {
		held.f.Close()
		held.f = nil
	}
}

// takeMachine passes the gate and takes the lock in mode; closing the
// returned file releases it (as does the process's death).
func takeMachine(mode lockMode) (*os.File, error) {
	gate, err := flockFile(filepath.Join(machineDir, machineGate), exclusive)
	if err != nil {
		return nil, err
	}
	defer gate.Close()
	return flockFile(filepath.Join(machineDir, machineLock), mode)
}

// flockFile opens path (creating it) and waits for a flock on it.
func flockFile(path string, mode lockMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("machine lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), int(mode))
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("machine lock: flock %s: %w", path, err)
	}
	return f, nil
}

func modeName(m lockMode) string {
	if m == exclusive {
		return "alone"
	}
	return "shared"
}
