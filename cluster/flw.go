package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DialBounded connects to a server for one short exchange that must never
// outlive ctx: a paused or cut-off server accepts, or not, and then never
// answers. Without a deadline on ctx the exchange gets def. The
// connection's deadline is ctx's, and ctx's end unblocks reads and writes
// too, not only the dial. done closes the connection and releases the
// deadline; call it once the exchange is over.
func DialBounded(ctx context.Context, addr string, def time.Duration) (c net.Conn, done func(), err error) {
	cancel := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, def)
	}
	var d net.Dialer
	c, err = d.DialContext(ctx, "tcp", addr)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	return c, func() {
		stop()
		c.Close()
		cancel()
	}, nil
}

// FourLetter sends a four-letter word (srvr, mntr, ruok, ...) to a server
// and returns its whole answer. It is the one probe that works against any
// backend and never needs a session, so it cannot disturb what it observes.
// Without a deadline on ctx it gives up after 2 s.
func FourLetter(ctx context.Context, addr, cmd string) (string, error) {
	c, done, err := DialBounded(ctx, addr, 2*time.Second)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", cmd, addr, err)
	}
	defer done()
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", fmt.Errorf("%s %s: write: %w", cmd, addr, err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return string(b), fmt.Errorf("%s %s: read: %w", cmd, addr, err)
	}
	return string(b), nil
}

// ParseSrvr reads the answer of srvr. A server that is up but not in a
// quorum answers "This ZooKeeper instance is not currently serving
// requests", which is Serving false and Mode "".
func ParseSrvr(out string) Status {
	var st Status
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "Mode":
			st.Mode = v
			st.Serving = true
		case "Zxid":
			if z, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64); err == nil {
				st.Zxid = int64(z) // 0xffffffffffffffff (none yet) becomes -1
			}
		case "Connections":
			st.Clients, _ = strconv.Atoi(v)
		}
	}
	return st
}

// notServing is how a server that is up but not in a quorum answers every
// four-letter word but a few.
const notServing = "This ZooKeeper instance is not currently serving requests"

// ErrNotServing is a server's answer when it is up but not in a quorum.
var ErrNotServing = errors.New("not serving (no quorum)")

// IsNotServing says out is the answer of a server that is up but not in a
// quorum, which is not an answer to the word asked.
func IsNotServing(out string) bool { return strings.HasPrefix(out, notServing) }

// ErrNotAllowed is a server's refusal of a four-letter word it was not
// configured to answer (4lw.commands.whitelist).
var ErrNotAllowed = errors.New("four-letter word not allowed by the server (4lw.commands.whitelist)")

// NotAllowed says out is a server's refusal of a four-letter word
// ("srvr is not executed because it is not in the whitelist.").
func NotAllowed(out string) bool { return strings.Contains(out, "not in the whitelist") }

// Srvr asks addr for srvr and tells its answers apart: the status when
// the server serves, ErrNotAllowed when it refuses the word, ErrNotServing
// when it is up without a quorum, the connection's error when it does not
// answer, and an error quoting anything else. It is for backends whose
// servers are not the harness's own process to look at (an external
// ensemble, remote hosts), where that answer is all there is.
func Srvr(ctx context.Context, addr string) (Status, error) {
	out, err := FourLetter(ctx, addr, "srvr")
	switch {
	case err != nil && out == "":
		return Status{}, err
	case NotAllowed(out):
		return Status{}, ErrNotAllowed
	case IsNotServing(out):
		return Status{}, ErrNotServing
	case err != nil:
		return Status{}, err
	}
	st := ParseSrvr(out)
	if !st.Serving {
		return st, fmt.Errorf("not a srvr answer: %q", FirstLine(out))
	}
	return st, nil
}

// ParseCons reads a cons answer, one connection per line
// (" /198.18.0.9:37864[1](queued=0,...,sid=0x1000007164c0002,...)"), and
// returns the session ids listed, sorted and without repeats. Connections
// without a session (the one asking) list none. An answer with no
// connection at all is not a list: the asking connection is always there.
func ParseCons(out string) ([]string, error) {
	if IsNotServing(out) {
		return nil, ErrNotServing
	}
	if !strings.Contains(out, "(queued=") {
		return nil, fmt.Errorf("not a cons answer: %q", FirstLine(out))
	}
	sessions := []string{}
	for _, l := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(l, "sid=")
		if !ok {
			continue
		}
		sid, _, _ := strings.Cut(rest, ",")
		sid = strings.TrimSuffix(sid, ")")
		if _, err := strconv.ParseUint(strings.TrimPrefix(sid, "0x"), 16, 64); err != nil || !strings.HasPrefix(sid, "0x") {
			return nil, fmt.Errorf("cons: session id %q", sid)
		}
		sessions = append(sessions, sid)
	}
	slices.Sort(sessions)
	return slices.Compact(sessions), nil
}

// FirstLine is out's first line, cut to 120 characters, for an error
// quoting an answer that is not what was asked.
func FirstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(l) > 120 {
		l = l[:120] + "…"
	}
	return l
}
