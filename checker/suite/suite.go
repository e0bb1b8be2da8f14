// Package suite assembles the lock workload's checkers from the
// sub-packages of checker/: which exist (All, Names), which decide the
// verdict by default (DefaultGate), and running them all (RunAll). Each
// workload owns its checkers (workloads.Spec); the lock's are these. The
// core package cannot do this, since the checkers import it.
package suite

import (
	"context"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/checker/linear"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/stats"
)

// All is every checker RunAll runs, in report order. integrity gates
// every run whatever the gate says: no verdict can be better than the
// data it rests on.
func All() []checker.Checker {
	return []checker.Checker{
		{Name: integrity.Name, Check: integrity.Check, Always: true},
		{Name: fence.NameDoubleWriter, Check: fence.CheckDoubleWriter},
		{Name: fence.NameWrongToken, Check: fence.CheckWrongToken},
		{Name: linear.NameRegister, Check: linear.CheckRegister},
		{Name: linear.NameMutex, Check: linear.CheckMutex},
		{Name: lock.NameLiveness, Check: lock.CheckLiveness, SoFar: lock.CheckLivenessSoFar},
		{Name: lock.NameGrantOverlap, Check: lock.CheckGrantOverlap},
		{Name: lock.NameTokenOrder, Check: lock.CheckTokenOrder},
		{Name: lock.NameHerd, Check: lock.CheckHerd},
		{Name: stats.Name, Check: stats.CheckStats},
	}
}

// DefaultGate is used when the caller names no gating checkers: the
// resource checkers answer the user's real question, "was my data
// corrupted?", and wrong-token the one a fenced run with intact data
// hides, "does my recipe present its grant's token?" (a wrong token keeps
// the data intact only by having the register turn the holder away).
// mutex does not gate by default: no lease-based lock passes it under
// SIGSTOP of a holder (see checker/linear/mutexmodel.go).
var DefaultGate = []string{fence.NameDoubleWriter, linear.NameRegister, fence.NameWrongToken}

// Names lists the known checkers, the names a gate may use.
func Names() []string {
	var out []string
	for _, c := range All() {
		out = append(out, c.Name)
	}
	return out
}

// ValidateGate rejects a gate naming a checker that does not exist, which
// would otherwise make every run unknown (or, worse, silently ungated).
func ValidateGate(names []string) error { return checker.ValidateGate(names, All()) }

// RunAll runs every checker and merges the gating ones (DefaultGate when
// gate is empty); see checker.Run.
func RunAll(ctx context.Context, in checker.Input, gate []string) checker.Results {
	if len(gate) == 0 {
		gate = slices.Clone(DefaultGate)
	}
	return checker.Run(ctx, in, gate, All())
}
