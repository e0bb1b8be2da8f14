// Package runner is the controller of one run: it wires the ensemble, the
// register, the workers, the nemesis, the history and the checkers, in the
// order that keeps every fault undoable and every record kept.
package runner

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/backend"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/resource/pgfence"
	"github.com/zkchaos/zkchaos/resource/register"
	"github.com/zkchaos/zkchaos/workloads"
)

// Config is everything that defines a run; test.json holds it whole, so a
// run can be repeated from its folder.
type Config struct {
	Name string `json:"name"`
	// Workload is what the clients do (workloads.Names): lock, config.
	Workload string `json:"workload"`
	// Admins is how many clients update the config (config workload).
	Admins int `json:"admins,omitempty"`
	// Tasks is the size of the election's task table at the start and of
	// each chunk it grows by; Idempotency is the register's task mode (on:
	// a task done is not run again).
	Tasks          int           `json:"tasks,omitempty"`
	Idempotency    string        `json:"idempotency,omitempty"`
	Workers        int           `json:"workers"`
	Keys           int           `json:"keys"`
	TimeLimit      time.Duration `json:"time_limit"`
	SessionTimeout time.Duration `json:"session_timeout"`
	Fencing        string        `json:"fencing"`
	// Resource is what the locks protect: ResourceRegister (also "",
	// runs from before the flag) or ResourcePostgres.
	Resource        string        `json:"resource,omitempty"`
	Nemesis         []string      `json:"nemesis"`
	NemesisInterval time.Duration `json:"nemesis_interval"`
	// FirstFault is the quiet time before the first fault (NemesisInterval
	// spaces the later ones): the first fault is what a short gate run
	// waits for, and may be its only one.
	FirstFault time.Duration `json:"first_fault_interval"`
	// PauseFor is how long a pause fault lasts; 0 means twice the session
	// timeout, long enough for ZooKeeper to expire the session.
	PauseFor       time.Duration `json:"pause_for"`
	Seed           int64         `json:"seed"`
	ResultsDir     string        `json:"results_dir"`
	Nodes          int           `json:"nodes"`
	Recipe         string        `json:"recipe"`
	Token          string        `json:"token"`
	Hold           time.Duration `json:"hold"`
	Think          time.Duration `json:"think"`
	AcquireTimeout time.Duration `json:"acquire_timeout"`
	OpTimeout      time.Duration `json:"op_timeout"`
	TickTime       time.Duration `json:"tick_time"`
	Recovery       time.Duration `json:"recovery"`
	// MonitorInterval is the runbook monitor's fixed sampling interval
	// (it also samples at every nemesis step); 0 runs no monitor.
	MonitorInterval time.Duration `json:"monitor_interval"`
	// Cluster is the ensemble's backend: local, docker, external or ssh
	// (cluster/backend).
	Cluster string `json:"cluster"`
	// Service is the lock service the servers run: zookeeper (the
	// default; "" in a run recorded before --service), redis or etcd
	// (local backend and lock workload only).
	Service string `json:"service,omitempty"`
	// Image is the docker backend's server image ("" = the tag `chaos
	// image build` makes for this machine); NoBuild refuses to build a
	// missing default image (an error instead). Images are never pulled.
	Image   string `json:"image,omitempty"`
	NoBuild bool   `json:"no_build,omitempty"`
	// ZK is the external backend's ensemble: its client addresses,
	// host:port,... (--zk; only with --cluster external).
	ZK string `json:"zk,omitempty"`
	// Hosts are the ssh backend's hosts (--hosts), one server each;
	// SSHUser, SSHPort, SSHKey and SSHKnownHosts its login (a key file or
	// the agent, never a password), Install apt-get installs what a host
	// lacks. Only with --cluster ssh.
	Hosts         string `json:"hosts,omitempty"`
	SSHUser       string `json:"ssh_user,omitempty"`
	SSHPort       int    `json:"ssh_port,omitempty"`
	SSHKey        string `json:"ssh_key,omitempty"`
	SSHKnownHosts string `json:"ssh_known_hosts,omitempty"`
	Install       bool   `json:"install,omitempty"`
	// RunRoot is the run's own subtree on an external ensemble
	// (/zkchaos/<run id>, set when the run starts): the lock root goes
	// beneath it and the run removes it at its end. "" otherwise.
	RunRoot string `json:"run_root,omitempty"`
	// Net is auto (namespaces when root), netns or loopback.
	Net  string   `json:"net"`
	Gate []string `json:"gate"`
	// CheckBudget bounds each checker's time; over it a checker is unknown.
	CheckBudget time.Duration `json:"check_budget"`
	// LockRoot is the persistent parent of every lock.
	LockRoot string `json:"lock_root"`
	// ACL is ACLOn (the lock root and keys are created by the controller
	// with a digest ACL, see acl.go) or ACLOff (world-writable, as
	// before).
	ACL string `json:"acl"`
	// WorkerLogHead and WorkerLogTail cap each worker's log: its first
	// and last bytes are kept, and the log says what was dropped between
	// (a flooding worker must not fill the results folder).
	WorkerLogHead int64 `json:"worker_log_head"`
	WorkerLogTail int64 `json:"worker_log_tail"`
	// StopAtFirst ends the workload when an online check of the apply log
	// finds its first violation, instead of at the time limit: a run that
	// is expected to fail fails sooner (chaos test-all's invalid cells).
	// The run still heals, reads finally, and is judged by the full check.
	StopAtFirst bool `json:"stop_at_first,omitempty"`
	// ResourcesInterval is how often the run's resource use (its
	// processes, the servers' sizes) is sampled into resources.jsonl;
	// SummaryInterval how often a summary line is logged. Both 0 (none)
	// but in chaos soak (10 s and 1 min).
	ResourcesInterval time.Duration `json:"resources_interval,omitempty"`
	SummaryInterval   time.Duration `json:"summary_interval,omitempty"`
	// Soak marks a run made by chaos soak.
	Soak bool `json:"soak,omitempty"`
	// Schedule, when set, is the schedule the nemesis follows instead of
	// drawing faults (Follow; nil draws them from the seed), read from
	// ScheduleFile. Overrides are the settings given beside it that
	// replaced those of the run it belongs to, in words, for the log.
	Schedule     *nemesis.Plan `json:"schedule,omitempty"`
	ScheduleFile string        `json:"schedule_file,omitempty"`
	Overrides    []string      `json:"overrides,omitempty"`
	// StopAfterSchedule ends the workload once the last entry of
	// Schedule is undone, TimeLimit bounding it: a run that must inject
	// every entry however late each starts (a start that waits for a new
	// leader delays the entries after it), and lasts no longer than
	// that. Without it the workload runs its time limit, and an entry
	// that no longer fits is left out.
	StopAfterSchedule bool `json:"stop_after_schedule,omitempty"`
}

// Values of Config.ACL.
const (
	ACLOn  = "on"
	ACLOff = "off"
)

// defaultTasks is --tasks when not given. The election's table grows by
// a chunk whenever fewer than half a chunk of it is left, so it need not
// last the run; but it must stay large beside what leaders complete while
// one of them is paused (about ten tasks a second at the default hold, 60
// in a 6 s pause). A deposed leader's task that a successor completed
// meanwhile is turned away as done when the deposed one resumes
// (idempotency), and unfenced its stale call then shows nothing: with 50
// tasks that took most pauses, and the unfenced election cell needed 5 to
// 9 pauses for its first stale-term violation instead of 2 or 3. With
// 1000 few pauses are lost so; the final phase completes at most 1500
// tasks, at under 2 ms each.
const defaultTasks = 1000

// Defaults returns the configuration of a plain `chaos run`.
func Defaults() Config {
	c := Config{
		Name:            "lock",
		Workload:        workloads.LockName,
		Admins:          1,
		Tasks:           defaultTasks,
		Idempotency:     register.IdempotencyOn,
		Workers:         6,
		Keys:            3,
		TimeLimit:       60 * time.Second,
		SessionTimeout:  time.Second,
		Fencing:         register.ModeOn,
		Resource:        ResourceRegister,
		Nemesis:         []string{"pause-holder"},
		NemesisInterval: 4 * time.Second,
		FirstFault:      0,
		ResultsDir:      "results",
		Nodes:           3,
		Recipe:          "seed",
		Token:           "czxid",
		Hold:            100 * time.Millisecond,
		Think:           20 * time.Millisecond,
		AcquireTimeout:  5 * time.Second,
		OpTimeout:       2 * time.Second,
		TickTime:        200 * time.Millisecond,
		Recovery:        2 * time.Second,
		MonitorInterval: time.Second,
		Cluster:         backend.Local,
		Service:         backend.ZooKeeper,
		Net:             "auto",
		CheckBudget:     DefaultCheckBudget,
		LockRoot:        "/locks/inventory",
		ACL:             ACLOn,
		WorkerLogHead:   1 << 20,
		WorkerLogTail:   1 << 20,
	}
	c.Gate = c.DefaultGate()
	return c
}

// DefaultGate is the gate of the run's workload when --gate is not given
// (nil for an unknown workload, which validation reports).
func (c Config) DefaultGate() []string {
	wl, err := c.NewWorkload()
	if err != nil {
		return nil
	}
	return wl.DefaultGate()
}

// Pause is the effective pause duration.
func (c Config) Pause() time.Duration {
	if c.PauseFor > 0 {
		return c.PauseFor
	}
	return 2 * c.SessionTimeout
}

// NetMode is the network mode the run will have: auto becomes netns when
// namespaces are available here, else loopback. Validation needs it, so a
// partition fault is refused before anything starts, not at its first
// injection.
func (c Config) NetMode() string {
	if c.Net != "auto" {
		return c.Net
	}
	if netns.Available() != nil {
		return "loopback"
	}
	return "netns"
}

// workerWorkload is the --workload a worker's command line carries: none
// for the default workload, so that the lock's command lines stay as they
// were (a third-party worker written for the lock need not know the flag).
func (c Config) workerWorkload() string {
	if c.Workload == workloads.LockName {
		return ""
	}
	return c.Workload
}

// SSHFlags are the ssh backend's settings, with the flags given named.
func (c Config) SSHFlags() backend.SSHFlags {
	f := backend.SSHFlags{Hosts: c.Hosts, Install: c.Install}
	f.Auth.User, f.Auth.Port, f.Auth.KeyFile, f.Auth.KnownHosts = c.SSHUser, c.SSHPort, c.SSHKey, c.SSHKnownHosts
	for _, g := range []struct {
		name string
		set  bool
	}{{"Hosts", c.Hosts != ""}, {"SSHUser", c.SSHUser != ""}, {"SSHPort", c.SSHPort != 0}, {"SSHKey", c.SSHKey != ""},
		{"SSHKnownHosts", c.SSHKnownHosts != ""}, {"Install", c.Install}} {
		if g.set {
			f.Given = append(f.Given, g.name)
		}
	}
	return f
}

// NewWorkload builds the run's workload from its settings.
func (c Config) NewWorkload() (workloads.Workload, error) {
	return workloads.New(c.Workload, workloads.Settings{Workers: c.Workers, Keys: c.Keys, Hold: c.Hold, Think: c.Think,
		AcquireTimeout: c.AcquireTimeout, LockRoot: c.lockRoot(), SessionTimeout: c.SessionTimeout, Admins: c.Admins, Tasks: c.Tasks})
}

// lockRoot is where the run's locks live: --lock-root, beneath the run's
// own subtree on an external ensemble.
func (c Config) lockRoot() string { return c.RunRoot + c.LockRoot }

// Caps is what the run will be able to do, by its backend and network
// mode, for validating its faults before anything starts.
func (c Config) Caps() nemesis.Caps {
	netns := c.NetMode() == "netns"
	return nemesis.Caps{Cluster: backend.Capabilities(c.Cluster, netns), WorkerNet: netns, Workload: c.Workload, Service: c.service()}
}

// DefaultRecipe is the recipe a run on service takes when --recipe is not
// given: def (the seed) on ZooKeeper, else the service's single-server
// lock.
func DefaultRecipe(service, def string) string {
	if s, err := backend.LookupService(cluster.ServiceOf(service)); err == nil && s.Recipe() != "" {
		return s.Recipe()
	}
	return def
}

// serviceFlag is the worker's --service: none for ZooKeeper, so that its
// command lines stay as they were.
func (c Config) serviceFlag() string {
	if c.zooKeeper() {
		return ""
	}
	return c.service()
}

// service is the run's lock service, ZooKeeper when not given.
func (c Config) service() string { return cluster.ServiceOf(c.Service) }

// zooKeeper reports whether the run's servers are ZooKeeper's: only then
// are there znodes to prepare, ACLs to set, and four-letter words to ask
// (the runbook monitor, the soak's counts).
func (c Config) zooKeeper() bool { return c.service() == cluster.ZooKeeper }

// traits are a workload's, for the checks that name the workloads that
// have one.
type traits = workloads.Traits

// knownWorkload says whether --workload names a workload (else
// validation reports that, and nothing more about it).
func (c Config) knownWorkload() bool {
	_, err := workloads.Lookup(c.Workload)
	return err == nil
}

// validateService checks --service against the backend, the workload, the
// subject: another service than ZooKeeper runs the lock workload only, on
// the local backend, with a subject written for it.
func (c Config) validateService() []error {
	var errs []error
	if err := backend.ValidateService(c.service(), c.Cluster); err != nil {
		return []error{setting.Err("Service", "", err)}
	}
	if c.knownWorkload() && !c.zooKeeper() && !workloads.TraitsOf(c.Workload).OtherServices {
		errs = append(errs, setting.Errorf("Service", c.service(), "only the %s workload runs on it (this run is %s %s)",
			workloads.With(func(t traits) bool { return t.OtherServices }), setting.Name("Workload"), c.Workload))
	}
	return errs
}

// MinTimeLimit is the shortest workload of a run without faults: less
// leaves the workers of a fresh ensemble no time for a critical section,
// and the run would only prove that the harness starts.
const MinTimeLimit = time.Second

// MinMonitorInterval is the shortest sampling interval: a sample reads
// every lock directory and asks every server twice, and a shorter
// interval would load the ensemble it observes.
const MinMonitorInterval = 100 * time.Millisecond

// MinResourcesInterval is the shortest resource sampling interval: a
// sample walks every server's data directory and reads /proc of every
// process of the run.
const MinResourcesInterval = 500 * time.Millisecond

// InjectAllowance is what a fault cycle allows, beside its quiet time and
// its hold, for finding a target and injecting and verifying the fault
// (pause-holder waits up to 1 s for a holder).
const InjectAllowance = time.Second

// FaultCycle is the time the first fault takes from the start of the
// workload: quiet, inject, hold. The undo comes after the time limit if
// need be.
func (c Config) FaultCycle() time.Duration {
	return c.FirstFault + InjectAllowance + c.Pause()
}

// Validate checks everything before anything is started, so bad input
// costs nothing and leaves nothing behind: each part of the run checks
// its own settings. Every error names the setting at fault (setting.FieldError).
func (c Config) Validate() error {
	errs := validateWorkload(c)
	errs = append(errs, validateFolder(c)...)
	errs = append(errs, validateFleet(c)...)
	errs = append(errs, validateServices(c)...)
	netErrs, capsKnown := validateNetwork(c)
	errs = append(errs, netErrs...)
	errs = append(errs, validateFaults(c, capsKnown)...)
	errs = append(errs, validateObservers(c)...)
	errs = append(errs, validateCheck(c)...)
	return errors.Join(errs...)
}

// validateWorkload checks the workload, first: the other parts'
// settings are judged against it, and an unknown one is the mistake the
// user made, whatever else it makes the other parts refuse.
func validateWorkload(c Config) []error {
	if _, err := c.NewWorkload(); err != nil {
		return []error{setting.Err("Workload", "", err)}
	}
	return nil
}

// validateFolder checks where the run's folder goes: its name, beneath
// the results folder.
func validateFolder(c Config) []error {
	var errs []error
	nameErr := store.ValidName(c.Name)
	if nameErr != nil {
		errs = append(errs, setting.Err("Name", "", nameErr))
	}
	if c.ResultsDir == "" {
		errs = append(errs, setting.Errorf("ResultsDir", "", "must not be empty"))
	} else if nameErr == nil {
		if err := store.CheckBase(filepath.Join(c.ResultsDir, c.Name)); err != nil {
			errs = append(errs, setting.Err("ResultsDir", c.ResultsDir, err))
		}
	}
	return errs
}

// checkResource refuses a --resource this run cannot have, before
// anything starts: PostgreSQL serves the lock workload's reads and writes
// (not the election's task table), through the built-in workers (an exec:
// subject writes to the register over HTTP itself and knows no --postgres),
// in the run's namespaces on the local backend, on a machine that has
// the server.
func (c Config) checkResource() error {
	switch c.Resource {
	case "", ResourceRegister:
		return nil
	case ResourcePostgres:
	default:
		return setting.Errorf("Resource", fmt.Sprintf("%q", c.Resource), "must be %s or %s", ResourceRegister, ResourcePostgres)
	}
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, setting.Errorf("Resource", ResourcePostgres, format, a...))
	}
	if pg := workloads.With(func(t traits) bool { return t.Postgres }); !workloads.TraitsOf(c.Workload).Postgres {
		bad("only the %s workload (not %s): it serves the %s workload's reads and writes", pg, c.Workload, pg)
	} else if !c.zooKeeper() {
		bad("only with %s %s for now: the other services' recipes were not run against it", setting.Name("Service"), cluster.ZooKeeper)
	} else if !subjects.Builtin(c.workerWorkload(), c.Recipe) {
		bad("subject %q is not a built-in recipe: only chaos-worker takes the PostgreSQL resource's address (docs/worker-protocol.md); an exec: or Curator subject writes to the register itself",
			c.Recipe)
	}
	if hosts := backend.PostgresHosts(); !slices.Contains(hosts, c.Cluster) {
		cl := setting.Name("Cluster")
		bad("only with %s %s", cl, strings.Join(hosts, " or "+cl+" "))
	}
	if c.NetMode() != "netns" {
		bad("needs the run's network namespaces (root, %s auto or netns): the server gets a namespace of its own", setting.Name("Net"))
	}
	if err := pgfence.Preflight(); err != nil {
		bad("%v", err)
	}
	return errors.Join(errs...)
}

// StopCheckers are the checkers whose first violation ends the workload
// under --stop-at-first: the gate's checkers that run online, or judge
// the run so far (progress.CanStop). Not the others: a finding that does not decide the verdict
// must not end a soak (a fenced soak was stopped by token-order, which
// does not gate, with its resource intact); chaos test-all gates each
// stopping cell on the checkers it expects to fail.
func (c Config) StopCheckers() []string {
	wl, err := c.NewWorkload()
	if err != nil {
		return nil
	}
	return c.stopCheckers(wl)
}

// stopCheckers are StopCheckers of the run's workload wl.
func (c Config) stopCheckers(wl workloads.Workload) []string {
	var out []string
	for _, n := range onlineCheckers(wl) {
		if slices.Contains(c.Gate, n) {
			out = append(out, n)
		}
	}
	return out
}

// allOnline are the checkers of every workload that can stop a run at
// their first violation, for the message refusing --stop-at-first.
func (c Config) allOnline() []string {
	var out []string
	for _, name := range workloads.Names() {
		c.Workload = name
		if wl, err := c.NewWorkload(); err == nil {
			out = append(out, onlineCheckers(wl)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// onlineCheckers are the workload's checkers that can find a violation
// while the run lasts: online (on the apply log or the history), or on
// the records so far (progress.CanStop).
func onlineCheckers(wl workloads.Workload) []string {
	var out []string
	cs := wl.Checkers()
	for _, ck := range cs {
		if progress.CanStop(cs, ck.Name) {
			out = append(out, ck.Name)
		}
	}
	return out
}
