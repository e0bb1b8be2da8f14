// Package child runs one `chaos run` as a child process, as chaos
// test-all, chaos gate and chaos replay do: each run gets its own
// process, folder, network slot and exit code, exactly as a user's run,
// and a run that fails or hangs costs only itself.
package child

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/zkchaos/zkchaos/observe/progress"
)

// Spec is one run to start.
type Spec struct {
	// Exe is the chaos binary; Args follow `run`.
	Exe  string
	Args []string
	// Log is the file the run's stdout and stderr are appended to.
	Log string
	// Latest is the link that names the run's folder once it has one
	// (store's <results>/<name>/latest): runs that share it must not
	// overlap.
	Latest string
	// Progress, when set, shows the status the run reports, under
	// Prefix, and is cleared when it ends.
	Progress *progress.Latest
	Prefix   string
}

// Result is how a run ended.
type Result struct {
	Exit    int
	Dir     string
	Elapsed time.Duration
}

// Run runs s until it exits; ctx ending interrupts it (SIGINT: the run
// then heals and still checks what it has). An error means the run could
// not be started or left no folder; the result then says how far it got.
func Run(ctx context.Context, s Spec) (Result, error) {
	var r Result
	cmd := exec.CommandContext(ctx, s.Exe, append([]string{"run"}, s.Args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 2 * time.Minute
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return r, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	err = runShown(cmd, s.Progress, s.Prefix)
	r.Elapsed = time.Since(start)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
	case err != nil:
		return r, fmt.Errorf("chaos run: %v", err)
	}
	if r.Dir, err = filepath.EvalSymlinks(s.Latest); err != nil {
		return r, fmt.Errorf("no run folder (exit %d, see %s)", r.Exit, s.Log)
	}
	return r, nil
}

// runShown runs cmd, passing the status it reports to shown under prefix
// (nil shown: just runs it).
func runShown(cmd *exec.Cmd, shown *progress.Latest, prefix string) error {
	if shown == nil {
		return cmd.Run()
	}
	r, w, err := progress.Pipe(cmd)
	if err != nil {
		return err
	}
	defer shown.Clear()
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return err
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		progress.ReadStatuses(r, func(st progress.Status) {
			st.Prefix = prefix
			shown.Set(st)
		})
	}()
	err = cmd.Wait()
	r.Close() // ends the reader even if a stray process kept the pipe open
	<-read
	return err
}
