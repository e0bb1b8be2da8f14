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
	// Tasks is the election's task table; Idempotency is the register's
	// task mode (on: a task done is not run again).
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
}

// Values of Config.ACL.
const (
	ACLOn  = "on"
	ACLOff = "off"
)

// Defaults returns the configuration of a plain `chaos run`.
func Defaults() Config {
	c := Config{
		Name:            "lock",
		Workload:        workloads.LockName,
		Admins:          1,
		Tasks:           300,
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

// checkTimeLimit refuses a time limit that cannot hold one whole fault
// cycle (a fault would be cut short, or never happen, and the run still
// look like a run with faults), or, without faults, that is below
// MinTimeLimit. The message names the value at fault and the numbers.
func (c Config) checkTimeLimit() error {
	if len(c.Nemesis) == 1 && c.Nemesis[0] == "none" {
		if c.TimeLimit < MinTimeLimit {
			return fmt.Errorf("--time-limit %s: too short; the minimum is %s", c.TimeLimit, MinTimeLimit)
		}
		return nil
	}
	cycle := c.FaultCycle()
	if c.TimeLimit >= cycle {
		return nil
	}
	hold, shorten := fmt.Sprintf("--pause %s", c.PauseFor), "--pause"
	if c.PauseFor == 0 {
		hold = fmt.Sprintf("pause %s (twice --session-timeout %s)", c.Pause(), c.SessionTimeout)
		shorten = "--session-timeout (or set --pause)"
	}
	return fmt.Errorf("--time-limit %s is shorter than one fault cycle: the minimum is %s (--first-fault %s + %s to inject + %s); raise --time-limit or shorten %s",
		c.TimeLimit, cycle, c.FirstFault, InjectAllowance, hold, shorten)
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
	}{{"hosts", c.Hosts != ""}, {"ssh-user", c.SSHUser != ""}, {"ssh-port", c.SSHPort != 0}, {"ssh-key", c.SSHKey != ""},
		{"ssh-known-hosts", c.SSHKnownHosts != ""}, {"install", c.Install}} {
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
		return []error{fmt.Errorf("--service: %w", err)}
	}
	if c.knownWorkload() && !c.zooKeeper() && !workloads.TraitsOf(c.Workload).OtherServices {
		errs = append(errs, fmt.Errorf("--service %s: only the %s workload runs on it (this run is --workload %s)", c.service(),
			workloads.With(func(t traits) bool { return t.OtherServices }), c.Workload))
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
// costs nothing and leaves nothing behind.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if err := store.ValidName(c.Name); err != nil {
		errs = append(errs, fmt.Errorf("--name: %w", err))
	}
	if c.Workers < 1 || c.Workers > 200 {
		bad("--workers %d: must be 1..200", c.Workers)
	}
	if c.Keys < 1 || c.Keys > 1000 {
		bad("--keys %d: must be 1..1000", c.Keys)
	}
	if c.Nodes < 1 || c.Nodes > 9 {
		bad("--nodes %d: must be 1..9", c.Nodes)
	}
	if c.TimeLimit <= 0 {
		bad("--time-limit %s: must be positive", c.TimeLimit)
	}
	if c.TickTime < 10*time.Millisecond {
		bad("--tick %s: must be at least 10ms", c.TickTime)
	}
	// ZooKeeper clamps a session timeout to [2, 20] ticks unless configured;
	// we raise the maximum to fit, but below two ticks it cannot go.
	if c.SessionTimeout < 2*c.TickTime {
		bad("--session-timeout %s: must be at least two ticks (%s)", c.SessionTimeout, 2*c.TickTime)
	}
	if c.Idempotency != register.IdempotencyOn && c.Idempotency != register.IdempotencyOff {
		bad("--idempotency %q: must be on or off", c.Idempotency)
	}
	if !slices.Contains([]string{register.ModeOn, register.ModeOff, register.ModeStrict}, c.Fencing) {
		bad("--fencing %q: must be on, off or strict", c.Fencing)
	}
	errs = append(errs, c.validateService()...)
	netOK := slices.Contains([]string{"auto", "netns", "loopback"}, c.Net)
	clusterErr := backend.Validate(c.Cluster, c.NetMode())
	if netOK && clusterErr != nil {
		errs = append(errs, fmt.Errorf("--cluster: %w", clusterErr))
	}
	if err := backend.CheckZK(c.Cluster, c.ZK); err != nil {
		errs = append(errs, err)
	}
	if err := backend.CheckHosts(c.Cluster, c.SSHFlags()); err != nil {
		errs = append(errs, err)
	}
	if root := backend.RunRoot(c.Cluster, "<run id>"); root != "" && c.knownWorkload() && !workloads.TraitsOf(c.Workload).UnderRunRoot {
		bad("--workload %s: not with --cluster %s: its znodes are at fixed paths outside the run's own subtree (%s), on an ensemble that is not the harness's to write at will; the %s workload's root goes under that subtree",
			c.Workload, c.Cluster, root, workloads.With(func(t traits) bool { return t.UnderRunRoot }))
	}
	if err := backend.CheckImage(c.Cluster, c.Image); err != nil {
		errs = append(errs, err)
	}
	if netOK && clusterErr == nil {
		if err := nemesis.ValidateFor(c.Nemesis, c.Caps()); err != nil {
			errs = append(errs, fmt.Errorf("--nemesis: %w", err))
		}
	}
	if c.NemesisInterval <= 0 {
		bad("--nemesis-interval %s: must be positive", c.NemesisInterval)
	}
	if c.FirstFault < 0 {
		bad("--first-fault %s: must not be negative", c.FirstFault)
	}
	if c.PauseFor < 0 {
		bad("--pause %s: must not be negative", c.PauseFor)
	}
	if c.ResourcesInterval != 0 && c.ResourcesInterval < MinResourcesInterval {
		bad("--resources-interval %s: must be 0 (none) or at least %s", c.ResourcesInterval, MinResourcesInterval)
	}
	if c.SummaryInterval < 0 {
		bad("--summary-interval %s: must not be negative", c.SummaryInterval)
	}
	if c.MonitorInterval != 0 && c.MonitorInterval < MinMonitorInterval {
		bad("--monitor-interval %s: must be 0 (no monitor) or at least %s", c.MonitorInterval, MinMonitorInterval)
	}
	if wl, err := c.NewWorkload(); err != nil {
		errs = append(errs, fmt.Errorf("--workload: %w", err))
	} else if len(c.Gate) == 0 {
		bad("--gate is empty: give one or more of %s", strings.Join(workloads.CheckerNames(wl), ", "))
	} else if err := workloads.ValidateGate(wl, c.Gate); err != nil {
		errs = append(errs, fmt.Errorf("--gate: %w", err))
	} else if c.StopAtFirst && len(c.StopCheckers()) == 0 {
		bad("--stop-at-first: no checker of the gate (%s) has an online check (%s have one)", strings.Join(c.Gate, ","), strings.Join(c.allOnline(), ", "))
	}

	if c.TimeLimit > 0 && c.FirstFault >= 0 && c.PauseFor >= 0 {
		if err := c.checkTimeLimit(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ResultsDir == "" {
		bad("--results: must not be empty")
	} else if store.ValidName(c.Name) == nil {
		if err := store.CheckBase(filepath.Join(c.ResultsDir, c.Name)); err != nil {
			bad("--results %s: %v", c.ResultsDir, err)
		}
	}
	if !slices.Contains([]string{"czxid", "seq"}, c.Token) {
		bad("--token %q: must be czxid or seq", c.Token)
	}
	if err := subjects.ValidateService(c.workerWorkload(), c.service(), c.Recipe); err != nil {
		errs = append(errs, fmt.Errorf("--recipe: %w", err))
	}
	if c.CheckBudget < 0 {
		bad("--check-budget %s: must not be negative", c.CheckBudget)
	}
	if c.Hold < 0 || c.Think < 0 {
		bad("--hold and --think must not be negative")
	}
	if c.AcquireTimeout <= 0 || c.OpTimeout <= 0 {
		bad("--acquire-timeout and --op-timeout must be positive")
	}
	if !netOK {
		bad("--net %q: must be auto, netns or loopback", c.Net)
	} else if c.Net == "netns" {
		if err := netns.Available(); err != nil {
			bad("--net netns: %v", err)
		}
	}
	if !strings.HasPrefix(c.LockRoot, "/") || strings.HasSuffix(c.LockRoot, "/") || len(c.LockRoot) < 2 {
		bad("--lock-root %q: must be an absolute znode path without a trailing slash", c.LockRoot)
	}
	if c.ACL != ACLOn && c.ACL != ACLOff {
		bad("--acl %q: must be on or off", c.ACL)
	}
	if err := c.checkResource(); err != nil {
		errs = append(errs, err)
	}
	if c.WorkerLogHead < 0 || c.WorkerLogTail < 0 {
		bad("worker log cap %d+%d bytes: must not be negative", c.WorkerLogHead, c.WorkerLogTail)
	}
	return errors.Join(errs...)
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
		return fmt.Errorf("--resource %q: must be %s or %s", c.Resource, ResourceRegister, ResourcePostgres)
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("--resource postgres: "+format, a...)) }
	if pg := workloads.With(func(t traits) bool { return t.Postgres }); !workloads.TraitsOf(c.Workload).Postgres {
		bad("only the %s workload (not %s): it serves the %s workload's reads and writes", pg, c.Workload, pg)
	} else if !c.zooKeeper() {
		bad("only with --service %s for now: the other services' recipes were not run against it", cluster.ZooKeeper)
	} else if !subjects.Builtin(c.workerWorkload(), c.Recipe) {
		bad("subject %q is not a built-in recipe: only chaos worker takes --postgres (docs/worker-protocol.md); an exec: or Curator subject writes to the register itself", c.Recipe)
	}
	if hosts := backend.PostgresHosts(); !slices.Contains(hosts, c.Cluster) {
		bad("only with --cluster %s", strings.Join(hosts, " or --cluster "))
	}
	if c.NetMode() != "netns" {
		bad("needs the run's network namespaces (root, --net auto or netns): the server gets a namespace of its own")
	}
	if err := pgfence.Preflight(); err != nil {
		bad("%v", err)
	}
	return errors.Join(errs...)
}

// StopCheckers are the checkers whose first online violation ends the
// workload under --stop-at-first: the gate's checkers that also run
// online. Not the others: a finding that does not decide the verdict
// must not end a soak (a fenced soak was stopped by token-order, which
// does not gate, with its resource intact); chaos test-all gates each
// stopping cell on the checkers it expects to fail.
func (c Config) StopCheckers() []string {
	wl, err := c.NewWorkload()
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range onlineCheckers(wl) {
		if slices.Contains(c.Gate, n) {
			out = append(out, n)
		}
	}
	return out
}

// allOnline are the checkers of every workload that have an online
// version, for the message refusing --stop-at-first.
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

// onlineCheckers are the workload's checkers that also run online (on
// the apply log or the history, while the run lasts).
func onlineCheckers(wl workloads.Workload) []string {
	var out []string
	for _, ck := range wl.Checkers() {
		if progress.Online(ck.Name) {
			out = append(out, ck.Name)
		}
	}
	return out
}
