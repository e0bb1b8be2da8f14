package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// errHelp is what parseFlags returns after -h: the usage went out, and
// the command exits 0.
var errHelp = flag.ErrHelp

// errUsage is what parseFlags and usageError return for a command-line
// mistake they have reported: the command exits 255 without saying more.
var errUsage = errors.New("command-line mistake")

// parseFlags parses a subcommand's flags. A mistake is reported as one
// line naming it, first, and one line pointing at -h: the flag package
// would print the whole usage (60 lines for chaos run) before the line
// that matters. -h prints the whole usage (the flag set's Usage, or its
// defaults) and returns errHelp; a mistake returns errUsage.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	usage := fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(fs, stderr)
		return errHelp
	case err != nil:
		return usageError(fs, stderr, "%v", err)
	}
	return nil
}

// usageError reports a command-line mistake of fs's command, the problem
// on the first line and a pointer to -h on the second, and returns
// errUsage.
func usageError(fs *flag.FlagSet, stderr io.Writer, format string, a ...any) error {
	fmt.Fprintf(stderr, "%s: %s\n%s: see '%s -h' for the flags\n", fs.Name(), fmt.Sprintf(format, a...), fs.Name(), fs.Name())
	return errUsage
}

func printUsage(fs *flag.FlagSet, w io.Writer) {
	if fs.Usage != nil {
		fs.Usage()
		return
	}
	fmt.Fprintf(w, "usage: %s [flags]\n", fs.Name())
	fs.PrintDefaults()
}

// parseExit is the exit code after a failed parseFlags: 0 after -h, 255
// after a mistake.
func parseExit(err error) int {
	if errors.Is(err, errHelp) {
		return 0
	}
	return exitHarness
}
