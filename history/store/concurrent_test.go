package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/racerepeat"
)

// helperEnv makes the test binary a child that creates run folders, so the
// race is also run between processes, not only between goroutines:
// "BASE|NS1,NS2,..." creates one run per start time (Unix ns) and prints
// their folders.
const helperEnv = "ZKCHAOS_STORE_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(createHelper(spec))
	}
	os.Exit(m.Run())
}

func createHelper(spec string) int {
	base, times, _ := strings.Cut(spec, "|")
	for _, v := range strings.Split(times, ",") {
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bad %s %q\n", helperEnv, spec)
			return 2
		}
		r, err := Create(base, "lock", time.Unix(0, ns))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(r.Dir)
	}
	return 0
}

// TestConcurrentCreateSameMillisecond: goroutines and processes create run
// folders with the same start time, all at once. Every run must get its own
// folder, and both latest links must resolve to a run folder whenever a
// reader looks, and at the end.
func TestConcurrentCreateSameMillisecond(t *testing.T) {
	raceCreate(t, func(int, int) time.Duration { return 0 })
}

// TestConcurrentRelinkLatest: the same race with a distinct start time per
// creator, so the folders cannot collide and only the latest links are
// raced: each update must use its own temporary link.
func TestConcurrentRelinkLatest(t *testing.T) {
	raceCreate(t, func(creator, j int) time.Duration {
		return time.Duration(creator)*time.Second + time.Duration(j)*time.Millisecond
	})
}

// raceCreate runs 4 processes and 8 goroutines that each create 5 runs at
// once; run j of creator i starts at t0 + offset(i, j).
func raceCreate(t *testing.T, offset func(creator, j int) time.Duration) {
	const goroutines, procs, each = 8, 4, 5
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for round := range racerepeat.Count(t, 3) {
		base := t.TempDir()
		t0 := time.Date(2026, 11, 29, 7, 0, 0, int(time.Duration(round)*time.Millisecond), time.UTC)

		stop := make(chan struct{})
		var readerErr atomic.Value
		var readers sync.WaitGroup
		for _, link := range []string{filepath.Join(base, "latest"), filepath.Join(base, "lock", "latest")} {
			readers.Add(1)
			go func() { defer readers.Done(); watchLink(link, stop, &readerErr) }()
		}

		var mu sync.Mutex
		var dirs []string
		var errs []error
		add := func(d string, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			dirs = append(dirs, d)
		}
		var wg sync.WaitGroup
		for i := range procs {
			var times []string
			for j := range each {
				times = append(times, strconv.FormatInt(t0.Add(offset(i, j)).UnixNano(), 10))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(self, "-test.run=^$")
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s", helperEnv, base, strings.Join(times, ",")))
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					add("", fmt.Errorf("helper process: %v: %s", err, stderr.String()))
				}
				sc := bufio.NewScanner(strings.NewReader(string(out)))
				for sc.Scan() {
					add(sc.Text(), nil)
				}
			}()
		}
		for i := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range each {
					r, err := Create(base, "lock", t0.Add(offset(procs+i, j)))
					if err != nil {
						add("", err)
						continue
					}
					add(r.Dir, nil)
				}
			}()
		}
		wg.Wait()
		close(stop)
		readers.Wait()

		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: concurrent Create failed: %v", round, err)
		}
		if e, _ := readerErr.Load().(error); e != nil {
			t.Fatalf("round %d: %v", round, e)
		}
		checkDistinctRuns(t, base, dirs, (goroutines+procs)*each)
	}
}

// watchLink reads link until stop: once it exists it must always resolve
// to a folder (never missing, never dangling, never a temporary name).
func watchLink(link string, stop <-chan struct{}, bad *atomic.Value) {
	seen := false
	for {
		select {
		case <-stop:
			return
		default:
		}
		target, err := filepath.EvalSymlinks(link)
		switch {
		case err != nil && seen:
			bad.CompareAndSwap(nil, fmt.Errorf("%s stopped resolving: %v", link, err))
			return
		case err == nil:
			seen = true
			if st, err := os.Stat(target); err != nil || !st.IsDir() {
				bad.CompareAndSwap(nil, fmt.Errorf("%s -> %s is not a folder", link, target))
				return
			}
		}
	}
}

// checkDistinctRuns: want runs, each in its own complete folder, named by
// its start time; latest links resolve to one of them; no temporary link
// is left behind.
var stampRE = regexp.MustCompile(`^20261129T0700\d\d\.\d{3}Z(-\d{3})?$`)

func checkDistinctRuns(t *testing.T, base string, dirs []string, want int) {
	t.Helper()
	if len(dirs) != want {
		t.Fatalf("%d runs created, want %d", len(dirs), want)
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			t.Errorf("two runs got folder %s", d)
		}
		seen[d] = true
		if !stampRE.MatchString(filepath.Base(d)) {
			t.Errorf("folder %s is not named by its start time", d)
		}
		for _, sub := range []string{ZKDir, WorkersDir} {
			if st, err := os.Stat(filepath.Join(d, sub)); err != nil || !st.IsDir() {
				t.Errorf("run folder %s lacks %s", d, sub)
			}
		}
	}
	for _, link := range []string{filepath.Join(base, "latest"), filepath.Join(base, "lock", "latest")} {
		got, err := filepath.EvalSymlinks(link)
		if err != nil {
			t.Fatalf("%s: %v", link, err)
		}
		if !seen[got] && !seen[filepath.Join(base, "lock", filepath.Base(got))] {
			t.Errorf("%s -> %s, not one of the runs", link, got)
		}
	}
	for _, dir := range []string{base, filepath.Join(base, "lock")} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("temporary link %s left in %s", e.Name(), dir)
			}
		}
	}
}
