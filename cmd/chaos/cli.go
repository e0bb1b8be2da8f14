package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() {
	// The help lists the commands in the order added: the usual ones first.
	cobra.EnableCommandSorting = false
}

// streams are a command tree's standard input and outputs: the process's
// for the binary, a test's own buffers otherwise.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// osStreams are the process's.
func osStreams() streams { return streams{in: os.Stdin, out: os.Stdout, err: os.Stderr} }

// exitStatus is a command's exit code once the command has said on
// stderr what there was to say: execute prints nothing more.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// status turns a command's exit code into what its RunE returns.
func status(code int) error {
	if code == 0 {
		return nil
	}
	return exitStatus(code)
}

// The help's groups, in the order it lists them.
const (
	groupRun     = "run"
	groupMatrix  = "matrix"
	groupInspect = "inspect"
	groupMaint   = "maintenance"
)

// execute runs the command line args (without the program name) through
// the command tree and returns the exit code: the one path for the binary
// and for the tests that drive a subcommand with their own streams.
func execute(ctx, hard context.Context, args []string, s streams) int {
	root := newRoot(hard, s)
	if len(args) == 0 {
		fmt.Fprint(s.err, root.UsageString())
		return exitHarness
	}
	root.SetArgs(longFlags(root, args))
	_, err := root.ExecuteContextC(ctx)
	var code exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	// What cobra itself refuses: an unknown command.
	first, _, _ := strings.Cut(err.Error(), "\n")
	fmt.Fprintf(s.err, "chaos: %s\nchaos: see 'chaos --help' for the commands\n", first)
	return exitHarness
}

// newRoot builds the command tree. hard is cancelled by a second signal:
// the commands that start a run stop at once then.
func newRoot(hard context.Context, s streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "chaos",
		Short: "zkchaos: chaos and correctness tests of locks, leader election and config on ZooKeeper",
		Long: `zkchaos: a Jepsen-style chaos and correctness harness for locks, leader
election and config notification on Apache ZooKeeper.

Exit codes: 0 valid, 1 invalid, 2 unknown, 255 the harness failed or the
input was bad (the problem is on the first line of stderr; nothing started).`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true, // man pages that do not change with the day they were made
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.AddGroup(
		&cobra.Group{ID: groupRun, Title: "Run and check:"},
		&cobra.Group{ID: groupMatrix, Title: "Gate and matrix:"},
		&cobra.Group{ID: groupInspect, Title: "Inspect:"},
		&cobra.Group{ID: groupMaint, Title: "Maintenance:"},
	)
	root.SetHelpCommandGroupID(groupMaint)
	root.SetCompletionCommandGroupID(groupMaint)
	root.SetFlagErrorFunc(flagMistake)
	helpToStderr(root)
	root.AddCommand(
		newRunCmd(hard), newSoakCmd(hard), newCheckCmd(), newReplayCmd(), newShrinkCmd(),
		newTestAllCmd(), newGateCmd(),
		newCompareCmd(), newFirstViolationCmd(), newServeCmd(),
		newBenchCmd(hard), newCleanupCmd(), newImageCmd(), newManCmd(),
		newRegisterCmd(), newJanitorCmd(),
	)
	return root
}

// helpToStderr sends a subcommand's help to stderr, where Go's flag
// package printed it before cobra (scripts and tests read it there); the
// top-level help stays on stdout.
func helpToStderr(root *cobra.Command) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c.HasParent() {
			c.SetOut(c.ErrOrStderr())
		}
		help(c, args)
	})
}

// mistake reports a command-line mistake of c: the problem on the first
// line, a pointer to -h on the second (the whole usage would bury the
// line that matters). It returns the exit code of bad input.
func mistake(c *cobra.Command, format string, a ...any) int {
	p := c.CommandPath()
	fmt.Fprintf(c.ErrOrStderr(), "%s: %s\n%s: see '%s -h' for the flags\n", p, fmt.Sprintf(format, a...), p, p)
	return exitHarness
}

// flagMistake is every command's answer to a flag pflag cannot parse.
func flagMistake(c *cobra.Command, err error) error {
	return exitStatus(mistake(c, "%s", flagError(err)))
}

// flagError words a pflag parse error as Go's flag package did, which the
// harness used before cobra: scripts and tests match these messages.
func flagError(err error) string {
	var missing *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	var noValue *pflag.ValueRequiredError
	switch {
	case errors.As(err, &missing):
		return "flag provided but not defined: -" + missing.GetSpecifiedName()
	case errors.As(err, &invalid):
		return fmt.Sprintf("invalid value %q for flag -%s: %v", invalid.GetValue(), invalid.GetFlag().Name, errors.Unwrap(invalid))
	case errors.As(err, &noValue):
		return "flag needs an argument: -" + noValue.GetSpecifiedName()
	}
	return err.Error()
}

// longFlags rewrites -name and -name=value, where name is a long flag of
// the command args select, as --name: Go's flag package took one dash or
// two, and command lines written for it must keep working, while pflag
// reads -name as the shorthands n, a, m, e. A flag's value is left alone
// even when it looks like a flag, and nothing after "--" is touched.
func longFlags(root *cobra.Command, args []string) []string {
	c, _, err := root.Find(args)
	if err != nil {
		return args
	}
	c.InitDefaultHelpFlag()
	fs := c.Flags()
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		if f == nil || len(name) < 2 {
			continue
		}
		out[i] = "--" + strings.TrimLeft(a, "-")
		if !hasValue && f.NoOptDefVal == "" {
			i++ // the flag's value, whatever it looks like
		}
	}
	return out
}

// parseFlags parses args into fs outside a command tree (the parsers the
// tests call), with the command tree's rules: one-dash long flags and Go's
// flag package's wording. A mistake is returned, worded, not printed.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	c := &cobra.Command{Use: fs.Name()}
	c.Flags().AddFlagSet(fs)
	if err := fs.Parse(longFlags(c, args)); err != nil {
		return errors.New(flagError(err))
	}
	return nil
}
