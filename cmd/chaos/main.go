// Command chaos is zkchaos: a Jepsen-style chaos and correctness harness
// for locks and leader election on Apache ZooKeeper.
//
//	chaos run [flags]          one chaos run; exit 0 valid, 1 invalid, 2 unknown, 255 harness failure
//	chaos soak [flags]         one long run (--duration 8h) with streaming checks, resource samples, metrics
//	chaos check [flags] DIR    re-run the checkers on a stored run, same exit codes
//	chaos test-all [flags]     the matrix of expected verdicts; --junit for CI
//	chaos gate --recipe exec:CMD [flags]  the standard cells against a team's own client
//	chaos compare A B          one page with two runs side by side
//	chaos first-violation DIR  each run's time to its first violation, and the median
//	chaos serve [flags]        the results folder in a browser (loopback only by default)
//	chaos bench [--quick]      throughput: raw ZooKeeper pairs vs each lock subject, harness overhead
//	chaos cleanup [--all]      remove what earlier runs left behind
//	chaos image build          build the docker backend's ZooKeeper image offline
//	chaos man DIR              write the man pages
//	chaos completion SHELL     a shell completion script
//
// Hidden from the help, started by chaos run only: chaos register (the
// fenced register) and chaos janitor (the dead-man switch). The worker
// processes of the built-in recipes are the chaos-worker binary beside
// this one (cmd/chaos-worker). docs/cli.md describes the command line.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(realMain(os.Args[1:]))
}

func realMain(args []string) int {
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
	return execute(ctx, hard, args, osStreams())
}
