package chaostest

// Run tokens. Real runs of every test package share the machine's two
// cores, so a test that starts one takes a token first: a flock on one of
// Tokens files, held until the test ends. Test packages run in parallel,
// each in its own process, and within a package tests marked t.Parallel
// run side by side; the tokens bound how many real runs go at once
// machine-wide whichever way they were started. Each run keeps to its own
// network slot and folder, so runs side by side do not disturb each other
// beyond sharing the CPU, which the verdicts are built to withstand
// (docs/architecture.md, "Tests"). The files are not
// /tmp/zkchaos-real.lock, which CI and developers may hold around the
// whole of go test: taking that one inside would deadlock.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/slowest"
)

// tokenDir holds the token files; unit tests point it at a folder of
// their own so that they do not contend with real test packages.
var tokenDir = os.TempDir()

// Tokens is how many real runs go at once on the machine
// (slowest.RunTokens: two, the most the project's CI allows on its
// 2-core machines; ZKCHAOS_TEST_RUNS overrides it).
var Tokens = slowest.RunTokens()

// holds are this process's tokens by the name of the test that took
// them. A subtest of a test that holds tokens runs under its parent's:
// waiting for more could wait forever behind parents that all wait for
// their subtests.
var holds struct {
	sync.Mutex
	byTest map[string]int  // test name -> tokens held
	long   map[string]bool // tests marked by LongRun
}

// LongRun marks t as a test that holds its run token for half a minute
// or more. Such a test, and a subtest of it, takes a token before the
// shorter tests waiting for one (as does a taker of several), so that
// the long ones start early and the suite does not end on one of them
// running alone beside an idle token. Call it before the test's first
// run.
func LongRun(t *testing.T) {
	holds.Lock()
	defer holds.Unlock()
	if holds.long == nil {
		holds.long = map[string]bool{}
	}
	holds.long[t.Name()] = true
}

// under reports whether test name is one of names or runs under one.
func under[V any](name string, names map[string]V) bool {
	for n := range names {
		if name == n || strings.HasPrefix(name, n+"/") {
			return true
		}
	}
	return false
}

// holdRuns takes n tokens for t until it ends, unless t or a test it runs
// under already holds some.
func holdRuns(t *testing.T, n int) {
	t.Helper()
	holds.Lock()
	inside := under(t.Name(), holds.byTest)
	first := n > 1 || under(t.Name(), holds.long)
	holds.Unlock()
	if inside {
		return
	}
	start := time.Now()
	files, err := takeTokens(min(n, Tokens), first)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Log(slowest.WaitLog(waited.Round(time.Second), len(files)))
	}
	holds.Lock()
	if holds.byTest == nil {
		holds.byTest = map[string]int{}
	}
	holds.byTest[t.Name()] = len(files)
	holds.Unlock()
	got := time.Now()
	t.Cleanup(func() {
		t.Log(slowest.HoldLog(time.Since(got).Round(100*time.Millisecond), len(files)))
		holds.Lock()
		delete(holds.byTest, t.Name())
		holds.Unlock()
		for _, f := range files {
			f.Close()
		}
	})
}

// takeTokens waits until it holds n tokens. One token is whichever is
// free first, polled. More are taken in order, 0 first, each waited for
// while holding the ones before: two takers of several cannot each hold
// part of what the other needs. A taker first (a long test's, or one of
// several) shows itself on the first file while it waits, and the others
// take no token meanwhile: a taker of several never starves behind
// takers of one, and long tests go before short ones.
func takeTokens(n int, first bool) ([]*os.File, error) {
	if first {
		// Shared, so that takers first wait side by side; the others
		// look for it with a non-blocking exclusive lock (othersFirst).
		mark, err := flockFile(firstPath(), syscall.LOCK_SH)
		if err != nil {
			return nil, err
		}
		defer mark.Close()
	}
	if n > 1 {
		var got []*os.File
		for i := range n {
			f, err := flockFile(tokenPath(i), syscall.LOCK_EX)
			if err != nil {
				for _, g := range got {
					g.Close()
				}
				return nil, err
			}
			got = append(got, f)
		}
		return got, nil
	}
	for backoff := 20 * time.Millisecond; ; backoff = min(2*backoff, 500*time.Millisecond) {
		if first {
			backoff = 20 * time.Millisecond
		} else if wait, err := othersFirst(); err != nil || wait {
			if err != nil {
				return nil, err
			}
			time.Sleep(backoff)
			continue
		}
		for i := range Tokens {
			f, ok, err := tryToken(i)
			if err != nil {
				return nil, err
			}
			if ok {
				return []*os.File{f}, nil
			}
		}
		time.Sleep(backoff)
	}
}

// othersFirst reports whether a taker first is waiting (takeTokens).
func othersFirst() (bool, error) {
	f, ok, err := tryLock(firstPath())
	if ok {
		f.Close()
	}
	return !ok && err == nil, err
}

func firstPath() string { return filepath.Join(tokenDir, "zkchaos-run-token.first") }

func tokenPath(i int) string { return filepath.Join(tokenDir, fmt.Sprintf("zkchaos-run-token.%d", i)) }

// tryToken takes token i if nobody holds it; closing the file releases it
// (as does the process's death).
func tryToken(i int) (*os.File, bool, error) { return tryLock(tokenPath(i)) }

// tryLock takes an exclusive flock on path if nobody holds one.
func tryLock(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false, fmt.Errorf("run token: %w", err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return f, true, nil
	case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
		f.Close()
		return nil, false, nil
	default:
		f.Close()
		return nil, false, fmt.Errorf("run token: flock %s: %w", path, err)
	}
}

// flockFile opens path (creating it) and waits for a flock on it.
func flockFile(path string, mode int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), mode)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock: flock %s: %w", path, err)
	}
	return f, nil
}
