package janitor

// Slot-race tests: several real processes claim and release network slots
// in a tight loop, each with a real janitor process that sweeps after it,
// while `chaos cleanup` runs over and over beside them. A slot must never
// be swept while the run that owns it lives. No ZooKeeper is needed, so
// many rounds fit in seconds; ZKCHAOS_RACE_REPEAT sets how many.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/internal/testkit/racerepeat"
)

// Roles of the test binary when started as a helper process.
const (
	roleEnv = "ZKCHAOS_JANITOR_TEST_ROLE" // "claimer"
	exeEnv  = "ZKCHAOS_JANITOR_TEST_EXE"  // the chaos binary, for janitors
	repEnv  = "ZKCHAOS_JANITOR_TEST_REPS" // rounds of a claimer
)

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "claimer" {
		os.Exit(claimer())
	}
	os.Exit(m.Run())
}

func needNetns(t *testing.T) {
	t.Helper()
	if err := netns.Available(); err != nil {
		t.Skipf("needs network namespaces: %v", err)
	}
}

// claimer is one helper process: rounds of claim, use, release, each with
// its own run id and janitor, as chaos run does. It prints the first
// violation and exits 1.
func claimer() int {
	exe := os.Getenv(exeEnv)
	reps, _ := strconv.Atoi(os.Getenv(repEnv))
	for i := 0; i < reps; i++ {
		run := fmt.Sprintf("race-%d-%d", os.Getpid(), i)
		if err := claimRound(exe, run); err != nil {
			fmt.Fprintf(os.Stderr, "run %s (round %d of pid %d): %v\n", run, i, os.Getpid(), err)
			return 1
		}
	}
	return 0
}

// claimRound is one run's life: janitor, network, a host, a short hold,
// checks that everything is still there and still ours, release, janitor
// done.
func claimRound(exe, run string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	jan, err := Start(exe, run, "")
	if err != nil {
		return err
	}
	n, err := netns.Create(ctx, run, proc.Self(), log)
	if err != nil {
		_ = jan.Finish(10 * time.Second)
		return fmt.Errorf("claim: %w", err)
	}
	if err := jan.Tell(Message{Slot: &n.Slot}); err != nil {
		return err
	}
	errs := []error{useSlot(ctx, n, run)}
	if err := n.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("release slot %d: %w", n.Slot, err))
	}
	if err := jan.Finish(10 * time.Second); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// useSlot adds a host and, after a short random hold, checks that the
// bridge, the host's namespace and the slot file are still the run's.
func useSlot(ctx context.Context, n *netns.Network, run string) error {
	h, err := n.AddHost(ctx, "w")
	if err != nil {
		return fmt.Errorf("slot %d swept under its owner: add host: %w", n.Slot, err)
	}
	time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
	if err := exec.Command("ip", "link", "show", n.Bridge).Run(); err != nil {
		return fmt.Errorf("slot %d swept under its owner: bridge %s gone", n.Slot, n.Bridge)
	}
	if _, err := os.Stat("/run/netns/" + h.NS); err != nil {
		return fmt.Errorf("slot %d swept under its owner: namespace %s gone", n.Slot, h.NS)
	}
	owner, err := chaostest.SlotOwner(n.Slot)
	if err != nil || owner != run {
		return fmt.Errorf("slot %d swept under its owner: slot file names %q (%v)", n.Slot, owner, err)
	}
	return nil
}

// TestSlotRaceClaimReleaseSweep: 4 claimer processes, each with its own
// janitors, and `chaos cleanup` in a loop. Slots are taken lowest-first,
// so a released slot is claimed again at once by another process while
// the releasing run's janitor still has its final sweep to do.
func TestSlotRaceClaimReleaseSweep(t *testing.T) {
	needNetns(t)
	exe := buildChaos(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const claimers = 4
	reps := racerepeat.Count(t, 6)
	start := time.Now()

	stop := make(chan struct{})
	var cleanups sync.WaitGroup
	var cleanupErr error
	var cleanupRuns int
	cleanups.Add(1)
	go func() {
		defer cleanups.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			out, err := exec.Command(exe, "cleanup").CombinedOutput()
			cleanupRuns++
			if err != nil && cleanupErr == nil {
				cleanupErr = fmt.Errorf("chaos cleanup: %v: %s", err, out)
			}
			if strings.Contains(string(out), "race-") {
				// A claimer's slot or process was removed: only right if
				// its claimer died, which the claimer's own exit shows.
				t.Logf("chaos cleanup removed: %s", out)
			}
		}
	}()

	var wg sync.WaitGroup
	errs := make([]error, claimers)
	for i := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), roleEnv+"=claimer", exeEnv+"="+exe, repEnv+"="+strconv.Itoa(reps))
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("claimer %d: %v: %s", i, err, out)
			}
		}()
	}
	wg.Wait()
	close(stop)
	cleanups.Wait()
	t.Logf("%d claimers x %d rounds, %d cleanups beside them, in %s", claimers, reps, cleanupRuns,
		time.Since(start).Round(time.Millisecond))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if cleanupErr != nil {
		t.Error(cleanupErr)
	}
}

// TestFinishedJanitorSparesTheNextRun is a race once seen between
// two runs: run A releases its slot, run B takes the same slot, and only then does A's
// janitor do its final sweep. The sweep must leave B's network alone.
func TestFinishedJanitorSparesTheNextRun(t *testing.T) {
	needNetns(t)
	exe := buildChaos(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for round := range racerepeat.Count(t, 3) {
		runA, runB := fmt.Sprintf("spare-a-%d", round), fmt.Sprintf("spare-b-%d", round)
		janA, err := Start(exe, runA, "")
		if err != nil {
			t.Fatal(err)
		}
		a, err := netns.Create(ctx, runA, proc.Self(), log)
		if err != nil {
			t.Fatal(err)
		}
		if err := janA.Tell(Message{Slot: &a.Slot}); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(ctx); err != nil {
			t.Fatal(err)
		}
		b, err := netns.Create(ctx, runB, proc.Self(), log)
		if err != nil {
			t.Fatal(err)
		}
		if b.Slot != a.Slot {
			// Another run took A's slot between the two: not the race.
			t.Logf("round %d: B got slot %d, A had %d", round, b.Slot, a.Slot)
		}
		if err := janA.Finish(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		err = useSlot(ctx, b, runB)
		if cerr := b.Close(ctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("B's release: %w", cerr))
		}
		if err != nil {
			t.Fatalf("round %d: A's janitor (slot %d) swept B's network (slot %d): %v", round, a.Slot, b.Slot, err)
		}
	}
}
