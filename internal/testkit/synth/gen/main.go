// Command gen writes a synthetic lock run (internal/testkit/synth) into a folder
// for `chaos check` and the report's size and load measurements:
//
//	go run ./internal/synth/gen -ops 100000 -dir /tmp/synth100k
//	bin/chaos check /tmp/synth100k
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/synth"
)

func main() {
	var s synth.Spec
	dir := flag.String("dir", "", "folder to write (required)")
	flag.IntVar(&s.Ops, "ops", 100_000, "worker operations")
	flag.IntVar(&s.Keys, "keys", 3, "lock keys")
	flag.IntVar(&s.Workers, "workers", 6, "worker processes at once")
	flag.DurationVar(&s.Hold, "hold", 100*time.Millisecond, "a holder's time between its read and its write")
	flag.DurationVar(&s.Think, "think", 20*time.Millisecond, "time between critical sections")
	flag.DurationVar(&s.FaultEvery, "fault-every", 4*time.Second, "quiet time before each pause-holder fault (negative: none)")
	flag.StringVar(&s.Fencing, "fencing", "off", "register fencing: off (each fault's late write lands) or on")
	flag.Uint64Var(&s.Seed, "seed", 1, "random seed")
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "gen: -dir is required and no arguments are taken")
		os.Exit(255)
	}
	r, err := synth.Generate(s)
	if err == nil {
		err = r.WriteDir(*dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(255)
	}
	end := r.Events[len(r.Events)-1].Time
	fmt.Printf("%s: %d operations, %d events, %d apply-log entries, %d faults, %s of run clock\n",
		*dir, synth.Ops(r.Events), len(r.Events), len(r.ApplyLog), r.Faults, time.Duration(end).Round(time.Second))
}
