package progress

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// EnvFD names the descriptor on which a `chaos run` started by `chaos
// test-all` reports its status (JSON lines, see Emit): the parent shows
// the cell's line, the child's own stderr goes to the cell's log.
const EnvFD = "ZKCHAOS_PROGRESS_FD"

// Pipe makes cmd report its status to the caller: the read end is for
// ReadStatuses, the write end must be closed once cmd has started.
func Pipe(cmd *exec.Cmd) (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("progress pipe: %w", err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, w)
	cmd.Env = append(cmd.Environ(), EnvFD+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	return r, w, nil
}

// ParentPipe is the pipe to the parent that EnvFD names, or nil. It takes
// EnvFD out of the environment and marks the descriptor close-on-exec, so
// the run's own processes inherit neither: a janitor holding the pipe
// would keep the parent from seeing its end.
func ParentPipe() *os.File {
	v, ok := os.LookupEnv(EnvFD)
	if !ok {
		return nil
	}
	os.Unsetenv(EnvFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "progress")
}

// ReadStatuses hands each status line of r to each, until r ends. A line
// that does not decode is skipped: the status is a signal, not a record.
func ReadStatuses(r io.Reader, each func(Status)) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var st Status
		if json.Unmarshal(sc.Bytes(), &st) == nil {
			each(st)
		}
	}
}

// Latest is the last status reported, for a Display to show.
type Latest struct {
	mu sync.Mutex
	st Status
	ok bool
}

// Set makes st the status shown.
func (l *Latest) Set(st Status) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st, l.ok = st, true
}

// Clear leaves nothing to show.
func (l *Latest) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ok = false
}

// Get is a Display's source; a nil Latest has nothing.
func (l *Latest) Get() (Status, bool) {
	if l == nil {
		return Status{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st, l.ok
}
