package subjects

import (
	"slices"
	"sync"
)

// memo is a subject's start command, found once per process: finding it
// checks the machine (an interpreter and its library, jars) and may build
// and cache the worker (compiling Curator's takes seconds), and every
// worker of a run starts the same way. A failure is not kept: the next
// call tries again (a package installed meanwhile is found).
type memo struct {
	mu   sync.Mutex
	prog string
	args []string
}

// get returns the command, finding it with find the first time.
func (m *memo) get(find func() (string, []string, error)) (string, []string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prog == "" {
		prog, args, err := find()
		if err != nil {
			return "", nil, err
		}
		m.prog, m.args = prog, args
	}
	return m.prog, slices.Clone(m.args), nil
}

// forget makes the next get find the command again (tests change the
// machine under it).
func (m *memo) forget() {
	m.mu.Lock()
	m.prog, m.args = "", nil
	m.mu.Unlock()
}
