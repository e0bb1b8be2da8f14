// Command chaos-worker is the built-in worker: one worker process of a
// zkchaos run, the worker protocol on stdin/stdout (docs/worker-protocol.md),
// logs on stderr. The controller starts one per logical process, for every
// built-in recipe (client/subjects), from the folder of its own executable.
//
//	chaos-worker --zk HOST:PORT,... --register URL --recipe NAME [flags]
//	chaos-worker --service redis|etcd --servers HOST:PORT,... --register URL [flags]
//
// It is a binary of its own, not a subcommand of chaos, because a run
// starts workers again and again (one per client, and a fresh one for
// every retired process) and each start pays the binary's package
// initialisation before it can say hello. So it links only the protocol,
// ZooKeeper's recipes and the resources' clients. A worker of another
// service (--service redis|etcd) is handed over, before anything else,
// to chaos-worker-services beside it (cmd/chaos-worker-services), which
// links those services' clients too: the same process (exec keeps its
// PID, input, outputs and environment), so whoever starts a worker knows
// one program (docs/measurements.md, "Worker start").
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/cmd/internal/workercmd"
)

// servicesWorker is the file name of the built-in worker that also links
// the recipes of the services other than ZooKeeper.
const servicesWorker = "chaos-worker-services"

func main() {
	if svc := workercmd.ServiceAsked(os.Args[1:]); svc != "" && !linked(svc) {
		handOver(svc)
	}
	workercmd.Main()
}

// linked says whether this binary has the recipes of service: ZooKeeper's,
// and those of any service whose recipes it imports. An unknown service
// counts as linked, so that the worker refuses it itself.
func linked(service string) bool {
	names, err := recipes.NamesForService(service)
	return err != nil || len(names) > 0
}

// handOver replaces this process with chaos-worker-services on the same
// command line. It returns only by exiting: the exec failed, which is said
// on the first line of stderr, exit 255.
func handOver(service string) {
	exe, err := os.Executable()
	prog := filepath.Join(filepath.Dir(exe), servicesWorker)
	if err == nil {
		err = syscall.Exec(prog, append([]string{prog}, os.Args[1:]...), os.Environ())
	}
	fmt.Fprintf(os.Stderr, "chaos-worker: --service %s runs in %s, which did not start: %v\nchaos-worker: `make build` builds it beside chaos-worker\n", service, prog, err)
	os.Exit(workercmd.ExitBadArgs)
}
