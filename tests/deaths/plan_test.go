package deaths

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// The three ways a run dies.
const (
	// killController: SIGKILL of the controller alone (OOM, a panic that
	// could not unwind); its janitor sweeps.
	killController = "controller"
	// killPair: the controller and its janitor together; nobody is left
	// to clean, the next run's start sweeps.
	killPair = "controller+janitor"
	// killTree: every process of the run at once, as a CI timeout or a
	// cgroup kill ends a job; the next run's start sweeps.
	killTree = "whole tree"
)

var kinds = []string{killController, killPair, killTree}

// targets are the moments a death aims at (chaostest.RunPhase's).
var targets = []string{chaostest.MomentSetup, chaostest.MomentQuiet, chaostest.MomentInject, chaostest.MomentHold,
	chaostest.MomentUndo, chaostest.MomentFinal, chaostest.MomentTeardown, chaostest.MomentCheck}

// order ranks the moments as a run passes them; the fault loop's four
// share a rank, as they repeat.
var order = map[string]int{
	chaostest.MomentSetup: 0, chaostest.MomentQuiet: 1, chaostest.MomentInject: 1, chaostest.MomentHold: 1, chaostest.MomentUndo: 1,
	chaostest.MomentFinal: 2, chaostest.MomentTeardown: 3, chaostest.MomentCheck: 4, chaostest.MomentReport: 5,
}

// plan is one death, all of it drawn from its seed, so that a death
// can be replayed alone (ZKCHAOS_DEATH_SEED=seed ZKCHAOS_DEATHS=1).
type plan struct {
	seed   uint64
	kind   string
	fault  string
	target string
	// delay is how long after the target moment is reached the kill
	// comes: a random moment within it, not only its start.
	delay time.Duration
}

// planOf draws a death from seed: kinds and faults rotate with
// consecutive seeds, the moment and the delay are random.
func planOf(seed uint64, faults []string) plan {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	p := plan{seed: seed, kind: kinds[seed%3], fault: faults[(seed/3)%uint64(len(faults))], target: targets[r.IntN(len(targets))]}
	if d := within[p.target]; d > 0 {
		p.delay = time.Duration(r.Int64N(int64(d)))
	}
	return p
}

// within is how far into a moment a death may come. Moments of a few
// milliseconds (a fault's inject and undo, teardown, check) are hit as
// soon as they are seen; setup spreads over the network, the register,
// the ensemble and the workers.
var within = map[string]time.Duration{
	chaostest.MomentSetup: 5 * time.Second,
	chaostest.MomentQuiet: 300 * time.Millisecond,
	chaostest.MomentHold:  500 * time.Millisecond,
	chaostest.MomentFinal: 100 * time.Millisecond,
}

func (p plan) String() string {
	return "seed=" + strconv.FormatUint(p.seed, 10) + " kind=" + p.kind + " fault=" + p.fault + " target=" + p.target
}

// settings are the campaign's from the environment: how many deaths per
// backend, which backends, the first seed and the profile.
type settings struct {
	deaths   int
	backends []string
	seed     uint64
	// quick is the CI default's profile: one server, a 2 s workload.
	quick bool
}

func settingsFromEnv(t *testing.T) settings {
	s := settings{deaths: 6, backends: []string{"local"}, seed: uint64(time.Now().UnixNano() % 1_000_000), quick: true}
	if v := os.Getenv("ZKCHAOS_DEATHS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ZKCHAOS_DEATHS=%q: want a count of deaths per backend, at least 1", v)
		}
		s.deaths, s.quick, s.backends = n, false, []string{"local", "docker", "external", "ssh"}
	}
	if v := os.Getenv("ZKCHAOS_DEATH_BACKENDS"); v != "" {
		s.backends = strings.Split(v, ",")
	}
	if v := os.Getenv("ZKCHAOS_DEATH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("ZKCHAOS_DEATH_SEED=%q: want an unsigned integer", v)
		}
		s.seed = n
	}
	if v := os.Getenv("ZKCHAOS_DEATH_PROFILE"); v != "" {
		if v != "quick" && v != "full" {
			t.Fatalf("ZKCHAOS_DEATH_PROFILE=%q: want quick or full", v)
		}
		s.quick = v == "quick"
	}
	return s
}

// profile are the flags of every campaign run: short, so that most of
// a death is its setup and its faults.
func (s settings) profile() []string {
	if s.quick {
		return []string{"--nodes", "1", "--workers", "2", "--keys", "1", "--time-limit", "2s", "--first-fault", "200ms",
			"--nemesis-interval", "300ms", "--pause", "700ms", "--recovery", "0s", "--progress", "off"}
	}
	return []string{"--nodes", "3", "--workers", "3", "--keys", "2", "--time-limit", "4s", "--first-fault", "300ms",
		"--nemesis-interval", "500ms", "--pause", "1s", "--recovery", "500ms", "--progress", "off"}
}

// rerun is the environment that replays death p on backend b alone.
func (s settings) rerun(p plan, b string) string {
	prof := "full"
	if s.quick {
		prof = "quick"
	}
	return "ZKCHAOS_DEATH_SEED=" + strconv.FormatUint(p.seed, 10) + " ZKCHAOS_DEATHS=1 ZKCHAOS_DEATH_PROFILE=" + prof +
		" ZKCHAOS_DEATH_BACKENDS=" + b + " go test -count=1 -run TestDeaths ./tests/deaths"
}
