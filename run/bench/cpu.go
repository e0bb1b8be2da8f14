package bench

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/process"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/observe/monitor"
)

// CPU roles: where the CPU time of a figure's window went. On a machine
// whose cores are all busy, throughput is the cores divided by the CPU
// one operation costs, so these say why one subject is slower than
// another (and than the raw pairs).
const (
	RoleServers    = "zookeeper"  // the ensemble's JVMs
	RoleWorkers    = "workers"    // the subject's worker processes
	RoleController = "controller" // this process: the worker handles, the raw pairs' clients
	RoleRegister   = "register"
	RoleMachine    = "machine" // every core's busy time, whoever used it
)

// cpuTimes is CPU seconds by role at one instant.
type cpuTimes map[string]float64

// cpuSample reads the CPU time used so far by the run's processes
// (found by their tag), by role, and the machine's busy time. workers are
// the PIDs of the figure's workers. A process that is gone or unreadable
// is left out (it can only lower a figure, never invent one).
func (e *env) cpuSample(workers []int) cpuTimes {
	t := cpuTimes{}
	add := func(role string, pid int) {
		p, err := process.NewProcess(int32(pid))
		if err != nil {
			return
		}
		if ts, err := p.Times(); err == nil {
			t[role] += ts.User + ts.System
		}
	}
	add(RoleController, os.Getpid())
	tagged, _ := proc.FindTagged(e.runID)
	for _, tp := range tagged {
		switch {
		case slices.Contains(workers, tp.PID):
			add(RoleWorkers, tp.PID)
		case isRegister(tp.PID):
			add(RoleRegister, tp.PID)
		case isWorker(tp.PID):
			// another figure's worker, still closing: nobody's
		default:
			add(RoleServers, tp.PID)
		}
	}
	if ts, err := cpu.Times(false); err == nil && len(ts) == 1 {
		c := ts[0]
		t[RoleMachine] = c.User + c.System + c.Nice + c.Irq + c.Softirq + c.Steal
	}
	return t
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

func isRegister(pid int) bool { return strings.Contains(cmdline(pid), " register ") }

func isWorker(pid int) bool {
	c := cmdline(pid)
	return strings.Contains(c, " worker ") || strings.Contains(c, "--register ")
}

// requests is the client packets (requests and pings) every server has
// received so far, by mntr; -1 when a server does not answer.
func (e *env) requests(ctx context.Context) int64 {
	var n int64
	for _, node := range e.ens.Cluster.Nodes() {
		ans, err := cluster.FourLetter(ctx, node.ClientAddr(), "mntr")
		if err != nil {
			return -1
		}
		m, err := monitor.ParseMntr(ans)
		if err != nil {
			return -1
		}
		n += m.PacketsReceived
	}
	return n
}

// costSample is what a window's probe reads as it opens and closes.
type costSample struct {
	cpu      cpuTimes
	requests int64
}

// probe reads the CPU by role (workers: the figure's worker PIDs) and the
// servers' request count.
func (e *env) probe(ctx context.Context, workers []int) func() costSample {
	return func() costSample { return costSample{cpu: e.cpuSample(workers), requests: e.requests(ctx)} }
}

// requestsPerOp is the servers' requests per operation between a and b
// (0 when unknown).
func requestsPerOp(a, b costSample, ops int64) float64 {
	if ops <= 0 || a.requests < 0 || b.requests < a.requests {
		return 0
	}
	return float64(b.requests-a.requests) / float64(ops)
}

// perOp is the CPU milliseconds per operation by role between a and b.
func perOp(a, b cpuTimes, ops int64) map[string]float64 {
	if ops <= 0 {
		return nil
	}
	out := map[string]float64{}
	for role, v := range b {
		if d := v - a[role]; d >= 0 {
			out[role] = 1000 * d / float64(ops)
		}
	}
	return out
}
