package runner

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/workloads"
)

// The fleet's view for client-side faults (nemesis.Workers): every live
// worker with its session, password and process handle, and the session states
// each worker reported, which is how those faults verify their effect
// from the client's side.

var _ nemesis.Workers = (*fleet)(nil)

// Workers implements nemesis.Workers: the live process of every slot.
func (f *fleet) Workers() []nemesis.Worker {
	var ws []nemesis.Worker
	for _, s := range f.slots {
		s.mu.Lock()
		l := s.cur
		w := nemesis.Worker{Process: s.process}
		// A holder whose write is over is releasing: no client fault can
		// make that section's write stale any more.
		if l != nil && s.phase != workloads.Idle && !s.wrote {
			w.Holding, w.Key, w.Token = true, s.key, s.token
			if s.phase == workloads.Critical {
				w.InCriticalSection, w.CriticalSince = true, s.critical
			}
		}
		s.mu.Unlock()
		if l == nil {
			continue
		}
		w.PID, w.Proc = l.p.PID(), l.wp
		l.mu.Lock()
		w.Session, w.Password = l.session, l.password
		l.mu.Unlock()
		ws = append(ws, w)
	}
	return ws
}

// SessionState implements nemesis.Workers: a live process's states, or
// those of one that exited lately (its last report stays what it said).
func (f *fleet) SessionState(pid int, session int64) string {
	f.mu.Lock()
	all, exited := f.all, f.exited
	f.mu.Unlock()
	for i := len(all) - 1; i >= 0; i-- {
		l := all[i]
		if l.p.PID() != pid {
			continue
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.states[session]
	}
	for i := len(exited) - 1; i >= 0; i-- {
		if exited[i].pid == pid {
			return exited[i].states[session]
		}
	}
	return ""
}

// sessionEvent records a session state the worker reported; hexID is the
// protocol's hex session id and password its optional base64 password.
func (l *live) sessionEvent(state, hexID, password string) {
	id, err := strconv.ParseUint(strings.TrimPrefix(hexID, "0x"), 16, 64)
	if err != nil {
		return // a worker that sends no usable id cannot be aimed at
	}
	sess := int64(id)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states[sess] = state
	switch state {
	case "connected":
		if sess != l.session {
			l.password = nil
		}
		l.session = sess
		if pw, err := base64.StdEncoding.DecodeString(password); err == nil && len(pw) > 0 {
			l.password = pw
		}
	case "expired":
		if sess == l.session {
			l.session, l.password = 0, nil
		}
	}
}
