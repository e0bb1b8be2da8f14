// Package resources samples, while a soak lasts, what the run's processes
// and servers use: RSS, CPU seconds and open files of the controller, of
// each ZooKeeper JVM and of each worker (gopsutil), and each server's
// znode, watch and ephemeral counts (mntr, taken from the runbook
// monitor's last sample when it runs) and the size of its data
// directories. Samples go to resources.jsonl in the run folder, one line
// per sample written as it is taken, so a leak or a growing ensemble shows
// over hours and a killed controller loses nothing it had.
//
// The sampler only observes: whatever it cannot read (a process gone, a
// paused server) is written into the sample as an error; it never fails
// the run.
package resources

// Roles of a sampled process.
const (
	RoleController = "controller"
	RoleZooKeeper  = "zookeeper"
	RoleWorker     = "worker"
)

// Sample is one look at the run's resources.
type Sample struct {
	Seq int `json:"seq"`
	// TimeNS is when the sample started, on the run's clock (the
	// history's Time, as every figure's x axis); Wall the same in Unix ns.
	TimeNS int64 `json:"time_ns"`
	Wall   int64 `json:"wall_ns"`
	TookNS int64 `json:"took_ns"`
	// Procs are the controller, then each server's JVM by id, then each
	// live worker by its history process.
	Procs   []Proc   `json:"procs"`
	Servers []Server `json:"servers"`
}

// Proc is one process's use.
type Proc struct {
	Role string `json:"role"`
	// ID is the server's id for a JVM, the worker's history process for a
	// worker, 0 for the controller.
	ID  int `json:"id"`
	PID int `json:"pid"`
	// RSS is the resident set in bytes; CPU the user+system seconds since
	// the process started; OpenFiles its file descriptors.
	RSS       uint64  `json:"rss_bytes"`
	CPU       float64 `json:"cpu_seconds"`
	OpenFiles int     `json:"open_files"`
	// HeapLive is the controller's live Go heap after its last garbage
	// collection (runtime/metrics /gc/heap/live:bytes); 0 for the others.
	// Beside RSS it tells data the controller keeps from memory the
	// runtime has not given back.
	HeapLive uint64 `json:"heap_live_bytes,omitempty"`
	// Error says what could not be read (the rest is then partial or 0).
	Error string `json:"error,omitempty"`
}

// Server is one ZooKeeper server's size.
type Server struct {
	ID int `json:"id"`
	// Znodes, Watches and Ephemerals are mntr's zk_znode_count,
	// zk_watch_count and zk_ephemerals_count; nil when the server did not
	// answer (CountsError says why).
	Znodes      *int64 `json:"znode_count,omitempty"`
	Watches     *int64 `json:"watch_count,omitempty"`
	Ephemerals  *int64 `json:"ephemerals_count,omitempty"`
	CountsError string `json:"counts_error,omitempty"`
	// DataBytes is the size of the server's data directories (snapshots
	// and transaction logs), -1 when they could not be read.
	DataBytes int64 `json:"data_bytes"`
}

// Controller is the controller's entry of s, if it was sampled.
func (s Sample) Controller() (Proc, bool) {
	for _, p := range s.Procs {
		if p.Role == RoleController {
			return p, true
		}
	}
	return Proc{}, false
}

// Total sums the RSS, CPU seconds and open files of role's processes.
func (s Sample) Total(role string) (rss uint64, cpu float64, files int) {
	for _, p := range s.Procs {
		if p.Role == role {
			rss, cpu, files = rss+p.RSS, cpu+p.CPU, files+p.OpenFiles
		}
	}
	return rss, cpu, files
}
