package history

import (
	"sync"
	"time"
)

// Memory is a Recorder that keeps the history in memory, for tests of the
// parts that record (the nemesis scheduler, the runner's clients) without
// a file. It assigns indexes and times exactly as Writer does.
type Memory struct {
	mu     sync.Mutex
	start  time.Time
	events []Event
	// Err, when set, is returned by every Append (a full disk, in tests).
	Err error
}

// NewMemory starts an in-memory history whose clock starts now.
func NewMemory() *Memory { return &Memory{start: time.Now()} }

// Since is the run clock: nanoseconds since the Memory was made.
func (m *Memory) Since() int64 { return int64(time.Since(m.start)) }

// Append assigns the event its index and time and keeps it.
func (m *Memory) Append(e Event) (Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Err != nil {
		return e, m.Err
	}
	e.Index = int64(len(m.events))
	e.Time = m.Since()
	m.events = append(m.events, e)
	return e, nil
}

// Events returns a copy of what was recorded so far.
func (m *Memory) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Event(nil), m.events...)
}

var _ Recorder = (*Memory)(nil)
