// Command chaos is zkchaos: a Jepsen-style chaos and correctness harness
// for locks and leader election on Apache ZooKeeper.
//
//	chaos run [flags]          one chaos run; exit 0 valid, 1 invalid, 2 unknown, 255 harness failure
//	chaos soak [flags]         one long run (--duration 8h) with streaming checks, resource samples, metrics
//	chaos check [flags] DIR    re-run the checkers on a stored run, same exit codes
//	chaos test-all [flags]     the matrix of expected verdicts; --junit for CI
//	chaos gate --recipe exec:CMD [flags]  the standard cells against a team's own client
//	chaos bench [--quick]      throughput: raw ZooKeeper pairs vs each lock subject, harness overhead
//	chaos compare A B          one page with two runs side by side
//	chaos serve [flags]        the results folder in a browser (loopback only by default)
//	chaos cleanup [--all]      remove what earlier runs left behind
//	chaos image build          build the docker backend's ZooKeeper image offline
//	chaos register ...         the fenced register (started by chaos run)
//	chaos worker ...           a worker process (started by chaos run)
//	chaos janitor ...          the dead-man switch (started by chaos run)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: chaos COMMAND [flags]

commands:
  run       run a chaos test and check it (chaos run -h for flags)
  soak      one long run with streaming checks, resource use over time, --metrics-addr (chaos soak -h)
  check     re-check a stored run: chaos check [--gate LIST] RUN-DIR
  test-all  run the matrix of recipes x faults x fencing against expected verdicts
  gate      run the standard cells of a correct lock (or --matrix FILE) against one subject, for CI
  bench     throughput of the lock subjects against raw ZooKeeper create+delete pairs (--quick for CI)
  compare   chaos compare [--out FILE] RUN-A RUN-B: one page with two runs side by side
  first-violation  chaos first-violation DIR...: each run's time from its first client op to its first violation, and the median
  serve     chaos serve [--results DIR] [--addr 127.0.0.1:8080]: browse the results folder
  cleanup   remove processes, namespaces and rules left by earlier runs
  image     chaos image build [--force]: the docker backend's ZooKeeper image, offline
  register  the fenced register process (started by run)
  worker    a worker process speaking the worker protocol (started by run)
  janitor   the dead-man switch (started by run)

exit codes: 0 valid, 1 invalid, 2 unknown, 255 the harness failed
`

func main() {
	os.Exit(realMain(os.Args[1:]))
}

func realMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return exitHarness
	}
	// The first SIGINT/SIGTERM cancels ctx: a run stops its workload, heals,
	// tears down and still checks what it recorded. A second one cancels
	// hard: stop now (the janitor undoes the faults); a third exits.
	ctx, cancel := context.WithCancelCause(context.Background())
	hard, cancelHard := context.WithCancelCause(context.Background())
	defer cancel(nil)
	defer cancelHard(nil)
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		n := 0
		for sig := range sigs {
			n++
			switch n {
			case 1:
				cancel(fmt.Errorf("signal %s", sig))
			case 2:
				cancelHard(fmt.Errorf("second signal %s", sig))
			default:
				os.Exit(exitHarness)
			}
		}
	}()
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return cmdRun(ctx, hard, rest)
	case "soak":
		return cmdSoak(ctx, hard, rest)
	case "check":
		return cmdCheck(ctx, rest)
	case "cleanup":
		return cmdCleanup(ctx, rest)
	case "register":
		return cmdRegister(ctx, rest)
	case "worker":
		return cmdWorker(ctx, rest)
	case "janitor":
		return cmdJanitor(ctx, rest)
	case "test-all":
		return cmdTestAll(ctx, rest)
	case "gate":
		return cmdGate(ctx, rest)
	case "bench":
		return cmdBench(ctx, hard, rest)
	case "image":
		return cmdImage(ctx, rest)
	case "compare":
		return cmdCompare(rest, os.Stdout, os.Stderr)
	case "first-violation":
		return cmdFirstViolation(rest, os.Stdout, os.Stderr)
	case "serve":
		return cmdServe(ctx, rest, os.Stdout, os.Stderr)
	case "help", "-h", "--help":
		fmt.Fprint(os.Stdout, usage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "chaos: unknown command %q\n\n%s", cmd, usage)
	return exitHarness
}
