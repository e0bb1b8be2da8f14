package nemesis

import (
	"fmt"
	"strings"
	"sync"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Caps is what a run can do, against which each fault's needs are
// checked before anything starts: the ensemble's backend's capabilities,
// and whether every worker has a network namespace of its own (where a
// partition of one worker can be made).
type Caps struct {
	Cluster   cluster.Capabilities
	WorkerNet bool
	// Workload is the run's --workload: faults aimed at one workload's
	// roles (the application leader) or calls (task replies) need it.
	Workload string
	// Service is the run's lock service (--service; "" is ZooKeeper):
	// each service's server faults need it.
	Service string
}

// need says why a run with caps c cannot use a fault, or nil.
type need func(c Caps) error

var (
	needsMu sync.Mutex
	needs   = map[string][]need{}
)

// requires records what a fault needs; a fault's init calls it next to
// register. A fault without requirements works in every run.
func requires(name string, n need) {
	needsMu.Lock()
	defer needsMu.Unlock()
	needs[name] = append(needs[name], n)
}

// needServer is a fault's need of a server verb from the backend.
func needServer(v cluster.Capability) need {
	return func(c Caps) error { return c.Cluster.Need(v) }
}

// needWorkerNet is a fault's need of workers in namespaces of their own.
func needWorkerNet(c Caps) error {
	if c.WorkerNet {
		return nil
	}
	return fmt.Errorf("the workers have no network namespaces of their own (this run is %s loopback: every process shares 127.0.0.1, and there is no traffic of one worker to cut)", setting.Name("Net"))
}

// needWorkload is a fault's need of the named workload.
func needWorkload(name string) need {
	return func(c Caps) error {
		if c.Workload == name {
			return nil
		}
		return fmt.Errorf("it acts on the %s workload, and this run is %s %s", name, setting.Name("Workload"), c.Workload)
	}
}

// Usable returns nil when a run with caps can use the named fault, else
// why not.
func Usable(name string, caps Caps) error {
	needsMu.Lock()
	ns := needs[name]
	needsMu.Unlock()
	for _, n := range ns {
		if err := n(caps); err != nil {
			return err
		}
	}
	return nil
}

// ValidateFor checks a --nemesis list for a run with caps: a fault the
// run cannot perform is refused, with why, before anything starts, rather
// than failing at every injection (or being recorded as done). "all" is
// not refused: it means every fault the run can use.
func ValidateFor(list []string, caps Caps) error {
	if err := ValidateList(list); err != nil {
		return err
	}
	var refused []string
	for _, n := range list {
		if n == All || n == "none" {
			continue
		}
		if err := Usable(n, caps); err != nil {
			refused = append(refused, fmt.Sprintf("%s: %v", n, err))
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("faults this run cannot perform: %s", strings.Join(refused, "; "))
	}
	return nil
}
