package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/cluster/backend"
	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/report/diagnose"
	"github.com/zkchaos/zkchaos/run/runner"
	"github.com/zkchaos/zkchaos/workloads"
)

// Exit codes: Jepsen's, so CI systems can gate on them.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUnknown = 2
	exitHarness = 255
)

// parseRunFlags turns `chaos run` arguments into a validated Config,
// outside the command tree: every problem is returned before anything
// starts. Its writer is unused: the problem is the error.
func parseRunFlags(args []string, _ io.Writer) (runner.Config, error) {
	cfg, _, err := newRunParser().parseArgs(args)
	return cfg, err
}

// newRunParser is chaos run's parser: a run's flags and --schedule.
func newRunParser() runParser {
	var schedule string
	return runParser{cmd: "chaos run", cfg: runner.Defaults(),
		extra: func(fs *pflag.FlagSet, cfg *runner.Config) {
			fs.StringVar(&schedule, "schedule", "", "inject exactly the faults of this schedule (a run's schedule.json: JSON lines of offset, fault, hold), not drawn from --seed; "+
				"the other settings come from the test.json beside it (or in the folder above), the flags given here override them")
			fs.BoolVar(&cfg.StopAfterSchedule, "stop-after-schedule", false, "with --schedule: end the workload once the schedule's last entry is undone (--time-limit still bounds it), so that every entry is injected however late the ones before made it start")
		},
		finish: func(fs *pflag.FlagSet, cfg *runner.Config) error { return followSchedule(fs, cfg, schedule) },
	}
}

// runParser is the one parser of a run's flags, for chaos run and for
// the commands that are a run with more (chaos soak): cfg holds the
// command's defaults, extra adds its own flags to the set and finish
// checks them once parsed (both may be nil).
type runParser struct {
	cmd    string
	cfg    runner.Config
	extra  func(fs *pflag.FlagSet, cfg *runner.Config)
	finish func(fs *pflag.FlagSet, cfg *runner.Config) error
	// name is the default --name for a workload (nil: the workload's name).
	name func(workload string) string
}

// runFlags are a run's flags as parsed: the configuration, and the flags
// that are turned into it once all are known.
type runFlags struct {
	cfg                   runner.Config
	nem, seed, gate, prog string
}

// parseArgs parses args on a flag set of its own.
func (p runParser) parseArgs(args []string) (runner.Config, progress.Mode, error) {
	fs := pflag.NewFlagSet(p.cmd, pflag.ContinueOnError)
	f := p.define(fs)
	if err := parseFlags(fs, args); err != nil {
		return f.cfg, progress.Auto, err
	}
	return p.settle(fs, f, fs.Args())
}

// define adds a run's flags to fs, with the parser's defaults.
func (p runParser) define(fs *pflag.FlagSet) *runFlags {
	f := &runFlags{cfg: p.cfg}
	defineWorkloadFlags(fs, f)
	defineFaultFlags(fs, f)
	defineClusterFlags(fs, &f.cfg)
	defineCheckFlags(fs, f)
	if p.extra != nil {
		p.extra(fs, &f.cfg)
	}
	return f
}

// defineWorkloadFlags: what the clients do, and how fast.
func defineWorkloadFlags(fs *pflag.FlagSet, f *runFlags) {
	cfg := &f.cfg
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "worker processes (logical clients) at once")
	fs.IntVar(&cfg.Keys, "keys", cfg.Keys, "lock keys SKU-1..K, each guarding one register key")
	fs.DurationVar(&cfg.TimeLimit, "time-limit", cfg.TimeLimit, "how long the workload runs")
	fs.DurationVar(&cfg.SessionTimeout, "session-timeout", cfg.SessionTimeout, "ZooKeeper session timeout of each worker")
	fs.StringVar(&cfg.Fencing, "fencing", cfg.Fencing, "register fencing: on, off or strict")
	fs.StringVar(&cfg.Resource, "resource", cfg.Resource, "the fenced resource the locks protect: register (chaos register, HTTP) or postgres (PostgreSQL 15 started by the run, a conditional UPDATE that refuses an older token; lock workload, built-in recipes, as root)")
	fs.StringVar(&f.seed, "seed", "", "random seed (default: from the clock; recorded in test.json)")
	fs.StringVar(&cfg.ResultsDir, "results", cfg.ResultsDir, "results folder")
	fs.StringVar(&cfg.Name, "name", cfg.Name, "test name (a folder under --results; default: the workload's name)")
	fs.StringVar(&cfg.Recipe, "recipe", cfg.Recipe, "lock recipe the workers run")
	fs.StringVar(&cfg.Token, "token", cfg.Token, "fencing token source: czxid or seq")
	fs.DurationVar(&cfg.Hold, "hold", cfg.Hold, "time between a holder's read and its write")
	fs.DurationVar(&cfg.Think, "think", cfg.Think, "time between critical sections")
	fs.DurationVar(&cfg.AcquireTimeout, "acquire-timeout", cfg.AcquireTimeout, "how long acquire waits for a lock")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", cfg.OpTimeout, "time after which an operation is recorded as info")
	fs.StringVar(&cfg.Workload, "workload", cfg.Workload, "what the clients do: "+strings.Join(workloads.Names(), ", "))
	fs.IntVar(&cfg.Admins, "admins", cfg.Admins, "config workload: how many clients update the config (the others watch it)")
	fs.IntVar(&cfg.Tasks, "tasks", cfg.Tasks, fmt.Sprintf("election workload: tasks the table the leaders run starts with; it grows by as many whenever fewer than half of them are left, up to %d", workloads.MaxTableTasks))
	fs.StringVar(&cfg.Idempotency, "idempotency", cfg.Idempotency, "election workload: on (a task done is not run again: its stored result answers) or off")
	fs.StringVar(&cfg.LockRoot, "lock-root", cfg.LockRoot, "persistent parent znode of the locks")
	fs.StringVar(&cfg.ACL, "acl", cfg.ACL, "on: the controller creates the lock root and keys with a digest ACL and workers authenticate; off: world-writable")
}

// defineFaultFlags: the nemesis and its timing.
func defineFaultFlags(fs *pflag.FlagSet, f *runFlags) {
	cfg := &f.cfg
	fs.StringVar(&f.nem, "nemesis", strings.Join(cfg.Nemesis, ","), "comma-separated faults, one at a time, chosen at random from --seed (default: the workload's, for lock pause-holder, config pause-worker, election pause-app-leader): "+
		strings.Join(nemesis.Names(), ", ")+" (partitions need --net netns; a fault the backend cannot perform is refused)")
	fs.DurationVar(&cfg.NemesisInterval, "nemesis-interval", cfg.NemesisInterval, "quiet time before each fault after the first (a fault: quiet, start, hold for --pause, stop)")
	fs.DurationVar(&cfg.FirstFault, "first-fault", cfg.FirstFault, "quiet time before the first fault, from the start of the workload (a pause-holder waits for a holder besides)")
	fs.DurationVar(&cfg.PauseFor, "pause", 0, "how long each fault is held (default: twice the session timeout)")
	fs.DurationVar(&cfg.Recovery, "recovery", cfg.Recovery, "the most the final phase waits, after healing, for retired workers (an operation closed as info) to act it out and exit before the final reads; it ends sooner once none is left")
}

// defineClusterFlags: where the servers run and which service they are.
func defineClusterFlags(fs *pflag.FlagSet, cfg *runner.Config) {
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "ZooKeeper servers in the ensemble")
	fs.DurationVar(&cfg.TickTime, "tick", cfg.TickTime, "ZooKeeper tickTime")
	fs.StringVar(&cfg.Net, "net", cfg.Net, "auto (namespaces when root), netns or loopback")
	fs.StringVar(&cfg.Cluster, "cluster", cfg.Cluster, "where the ensemble runs: local (JVMs on this machine), docker (containers; needs --net netns) external (an ensemble you run, given by --zk: client faults only) or ssh (one server per host of --hosts, driven over SSH; docs/ssh.md)")
	fs.StringVar(&cfg.Service, "service", cfg.Service, "the lock service the servers run: "+strings.Join(backend.Services(), ", ")+" (redis and etcd: --cluster local and --workload lock only, from Debian's redis-server and etcd-server; default --recipe redis-lock or etcd-mutex)")
	fs.StringVar(&cfg.ZK, "zk", "", "with --cluster external: the ensemble's client addresses, host:port,... (never started, stopped or faulted; the run's znodes go under /zkchaos/<run id> and are removed at its end)")
	fs.StringVar(&cfg.Hosts, "hosts", "", "with --cluster ssh: the servers' hosts, host1,host2,... (one ZooKeeper server each; --nodes follows)")
	fs.StringVar(&cfg.SSHUser, "ssh-user", "", "with --cluster ssh: the login on every host (default $USER; root, or a user with the sudo rights of docs/ssh.md)")
	fs.IntVar(&cfg.SSHPort, "ssh-port", 0, "with --cluster ssh: sshd's port on every host (default 22)")
	fs.StringVar(&cfg.SSHKey, "ssh-key", "", "with --cluster ssh: private key file without a passphrase (default: the agent at SSH_AUTH_SOCK)")
	fs.StringVar(&cfg.SSHKnownHosts, "ssh-known-hosts", "", "with --cluster ssh: known_hosts file that must list every host's key (default ~/.ssh/known_hosts)")
	fs.BoolVar(&cfg.Install, "install", false, "with --cluster ssh: apt-get install the Debian packages a host lacks (Java, ZooKeeper's jars, iptables)")
	fs.StringVar(&cfg.Image, "image", "", "with --cluster docker: the server image (default: the tag chaos image build makes here; never pulled)")
	fs.BoolVar(&cfg.NoBuild, "no-build", false, "with --cluster docker: fail instead of building a missing ZooKeeper image")
}

// defineCheckFlags: what is checked while and after the run, and shown.
func defineCheckFlags(fs *pflag.FlagSet, f *runFlags) {
	cfg := &f.cfg
	fs.DurationVar(&cfg.MonitorInterval, "monitor-interval", cfg.MonitorInterval, "how often the runbook monitor samples the lock directories and the servers' mntr and cons, besides every nemesis step (0: no monitor)")
	fs.StringVar(&f.gate, "gate", "", "checkers that decide the verdict (all run and are reported; default: the workload's gate, for lock "+
		strings.Join(cfg.Gate, ",")+"); "+workloads.CheckersHelp())
	fs.DurationVar(&cfg.CheckBudget, "check-budget", cfg.CheckBudget, "time each checker may take; over it a checker is unknown (0: no limit)")
	fs.BoolVar(&cfg.StopAtFirst, "stop-at-first", cfg.StopAtFirst, "end the workload at the first violation that a checker of --gate finds while the run lasts (online, or by checking the run so far), then heal, read finally and check as usual: invalid sooner (chaos test-all and chaos gate use it for cells that expect only violations)")
	fs.StringVar(&f.prog, "progress", string(progress.Auto), progressUsage)
}

// settle turns the parsed flags into the run's configuration: the
// defaults that depend on other flags, then the parser's own checks and
// the configuration's validation.
func (p runParser) settle(fs *pflag.FlagSet, f *runFlags, args []string) (runner.Config, progress.Mode, error) {
	cfg := f.cfg
	if len(args) > 0 {
		return cfg, progress.Auto, usageMistake{fmt.Sprintf("unexpected arguments: %s", strings.Join(args, " "))}
	}
	mode, err := progress.ParseMode(f.prog)
	if err != nil {
		return cfg, mode, err
	}
	p.derive(fs, f, &cfg)
	if cfg.Seed, err = parseSeed(f.seed); err != nil {
		return cfg, mode, err
	}
	if p.finish != nil {
		if err := p.finish(fs, &cfg); err != nil {
			return cfg, mode, err
		}
	}
	return cfg, mode, cfg.Validate()
}

// derive gives the flags left out the defaults that follow from the
// others: the service's recipe, one server per host, the workload's
// faults, timing, name and gate.
func (p runParser) derive(fs *pflag.FlagSet, f *runFlags, cfg *runner.Config) {
	if !fs.Changed("recipe") {
		cfg.Recipe = runner.DefaultRecipe(cfg.Service, cfg.Recipe)
	}
	if n := backend.HostCount(cfg.Cluster, cfg.Hosts); n > 0 {
		// One server per host, whatever --nodes says.
		cfg.Nodes = n
	}
	cfg.Nemesis = splitList(f.nem)
	if wl, err := cfg.NewWorkload(); err == nil {
		workloadDefaults(fs, cfg, wl)
	}
	if !fs.Changed("name") {
		cfg.Name = cfg.Workload
		if p.name != nil {
			cfg.Name = p.name(cfg.Workload)
		}
	}
	cfg.Gate = splitList(f.gate)
	if !fs.Changed("gate") {
		cfg.Gate = cfg.DefaultGate()
	}
}

// parseSeed reads --seed; none is a seed from the clock.
func parseSeed(s string) (int64, error) {
	if s == "" {
		return time.Now().UnixNano() & (1<<53 - 1), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("--seed %q: not an integer", s)
	}
	return n, nil
}

// usageMistake is a command-line mistake found after parsing: reported
// as mistake reports it (two lines), not as a failure.
type usageMistake struct{ msg string }

func (u usageMistake) Error() string { return u.msg }

// newRunCmd is `chaos run`.
func newRunCmd(hard context.Context) *cobra.Command {
	p := newRunParser()
	c := &cobra.Command{
		Use:     "run [flags]",
		Short:   "run a chaos test and check it",
		Long:    "Run a chaos test and check it: start the ensemble, the workers and the register, inject faults,\ncheck the history and write the report.\n\n" + exitCodesHelp,
		GroupID: groupRun,
	}
	f := p.define(c.Flags())
	c.RunE = func(c *cobra.Command, args []string) error {
		cfg, mode, err := p.settle(c.Flags(), f, args)
		if err != nil {
			return status(settleFailed(c, err))
		}
		return status(startRun(c, hard, cfg, mode))
	}
	return c
}

const exitCodesHelp = "Exit codes: 0 valid, 1 invalid, 2 unknown, 255 the harness failed or the input was bad."

// settleFailed reports why a run's flags were refused: a mistake in two
// lines, anything else in one. It returns the exit code of bad input.
func settleFailed(c *cobra.Command, err error) int {
	var u usageMistake
	if errors.As(err, &u) {
		return mistake(c, "%s", u.msg)
	}
	fmt.Fprintf(c.ErrOrStderr(), "%s: %v\n", c.CommandPath(), err)
	return exitHarness
}

// startRun runs one configured run and returns its exit code.
func startRun(c *cobra.Command, hard context.Context, cfg runner.Config, mode progress.Mode) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(c.ErrOrStderr(), "chaos run: find own executable: %v\n", err)
		return exitHarness
	}
	track, stderr, stopShowing := showProgress(mode)
	out, err := runner.Run(c.Context(), hard, cfg, exe, os.Args, stderr, runner.WithProgress(track))
	stopShowing()
	return finishRun("chaos run", out, err)
}

const progressUsage = "live status on stderr: auto (an updating line on a terminal, else a plain line every 5s), line, or off; violations counted live are a signal, the verdict is the check after the run"

// showProgress shows the run's status on stderr in mode and, for a run
// started by chaos test-all, on the pipe to it. It returns the tracker
// the run keeps current (nil when shown nowhere: no online check runs),
// the stderr the run logs to, and stop, which takes the line away before
// the summary.
func showProgress(mode progress.Mode) (track *progress.Tracker, stderr io.Writer, stop func()) {
	parent := progress.ParentPipe()
	if mode == progress.Off && parent == nil {
		return nil, os.Stderr, func() {}
	}
	track = progress.NewTracker()
	d := progress.Start(mode, os.Stderr, track.Status)
	if parent == nil {
		return track, d.Bypass(os.Stderr), d.Stop
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); progress.Emit(ctx, parent, track.Status) }()
	return track, d.Bypass(os.Stderr), func() { cancel(); <-done; parent.Close(); d.Stop() }
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// cmdRun is `chaos run` with args.
func cmdRun(ctx, hard context.Context, args []string) int {
	return execute(ctx, hard, append([]string{"run"}, args...), osStreams())
}

// finishRun prints a run's summary and timings and turns its outcome into
// the exit code, for chaos run and chaos soak.
func finishRun(cmd string, out *runner.Outcome, err error) int {
	if ns := (runner.NotStarted{}); errors.As(err, &ns) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", cmd, ns.Err)
		return exitHarness
	}
	if out != nil && out.Check != nil {
		printSummary(os.Stdout, out.Check)
		printDiagnosis(os.Stdout, out)
		fmt.Fprintf(os.Stdout, "timings: ensemble ready %.1fs, setup %.1fs, workload %.1fs, teardown %.1fs, total %.1fs, %d worker processes\n",
			out.Timings.Ensemble.Seconds(), out.Timings.Setup.Seconds(), out.Timings.Workload.Seconds(),
			out.Timings.Teardown.Seconds(), out.Timings.Total.Seconds(), out.Timings.Processes)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: harness failure: %v\n", cmd, err)
		if out != nil && out.Run != nil {
			fmt.Fprintf(os.Stderr, "%s: what was recorded is in %s (chaos check %s)\n", cmd, out.Run.Dir, out.Run.Dir)
		}
		return exitHarness
	}
	return exitCode(out.Check)
}

// printDiagnosis tells, after the summary of a run not judged valid, why
// its subject could not run, when it completed no operation or failed
// every operation of a kind (report/diagnose, which chaos gate's
// baseline uses too). A verdict of unknown says only that nothing could
// be judged; this says what the subject reported and what it likely
// lacks. A subject that completed nothing is never judged valid (a run
// without an accepted write or a finished task decides nothing), so a
// valid run, a long soak's among them, is not read again for it.
func printDiagnosis(w io.Writer, out *runner.Outcome) {
	if out.Run == nil || out.Check.Results.Valid == checker.Valid {
		return
	}
	d, err := diagnose.Dir(os.DirFS(out.Run.Dir))
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		return
	}
	if d.Stuck() {
		d.Write(w)
	}
}

// workloadDefaults gives the flags the user left out the workload's own
// defaults: its fault, and its session timeout and first fault.
func workloadDefaults(fs *pflag.FlagSet, cfg *runner.Config, wl workloads.Workload) {
	if !fs.Changed("nemesis") {
		cfg.Nemesis = wl.DefaultFaults()
	}
	t := wl.DefaultTiming()
	if t.SessionTimeout > 0 && !fs.Changed("session-timeout") {
		cfg.SessionTimeout = t.SessionTimeout
	}
	if t.FirstFault > 0 && !fs.Changed("first-fault") {
		cfg.FirstFault = t.FirstFault
	}
}
