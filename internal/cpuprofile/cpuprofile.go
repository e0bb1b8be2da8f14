// Package cpuprofile writes a process's CPU profile to a file: the
// controller's with chaos bench --profile, and each built-in worker's
// (cmd/chaos-worker) when its environment asks for it. It is a package of
// its own, below every other, so the lean worker binary gets it without
// linking run/bench.
package cpuprofile

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// Start writes this process's CPU profile to path until stop.
func Start(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
