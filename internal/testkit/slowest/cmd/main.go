// Command slowest is make test's filter of `go test -json` (package
// internal/testkit/slowest): go test's usual output as it comes, then the
// ten slowest packages and tests; exit 1 when the stream showed a
// failure.
//
//	go test -json ./... | go run ./internal/testkit/slowest/cmd
package main

import (
	"os"
	"runtime/debug"

	"github.com/zkchaos/zkchaos/internal/testkit/slowest"
)

func main() {
	// Names are shown relative to this module: tests/gate, not
	// github.com/zkchaos/zkchaos/tests/gate.
	module := ""
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path != "" {
		module = bi.Main.Path + "/"
	}
	os.Exit(slowest.Run(os.Stdin, os.Stdout, 10, module))
}
