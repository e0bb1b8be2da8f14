package nemesis

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"syscall"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

// The minimal ZooKeeper client handshake, for expiring a session from
// outside the process that owns it (the technique of Curator's old
// KillSession test utility): attach to the session with its id and
// password, then close it. Closing the TCP connection alone would not do:
// the server keeps a session whose connection drops until its timeout, so
// the close has to be the explicit closeSession request (opcode -11),
// which the leader commits and every server then acts on by dropping its
// connection of that session.

// opCloseSession is ZooKeeper's closeSession opcode.
const opCloseSession = -11

// errSessionRefused: the server answered the connect with session id 0,
// i.e. the session is already gone or the password is wrong.
var errSessionRefused = errors.New("server refused the session (already expired, or wrong password)")

// errReplyLost means the closeSession went out but the server closed the
// connection before its reply arrived. That is a race inside ZooKeeper,
// not a failure: committing the close makes the server drop every
// connection of the session, ours included, and the drop can overtake the
// reply. Whether the close happened is then judged by its effects.
var errReplyLost = errors.New("the server closed the connection before the closeSession reply (the close drops the session's connections, ours too)")

// closeResult is what the server said while closing a session.
type closeResult struct {
	// Zxid is the transaction id of the committed closeSession.
	Zxid int64
	// Timeout is the session timeout the server reported on attaching.
	Timeout time.Duration
	// Sent is when the closeSession request went out, on a session the
	// server had just attached us to: it existed then. Zero if not sent.
	Sent time.Time
}

// closeTimeout bounds one closeSession exchange: one round trip and a
// commit, however long the caller's own deadline.
const closeTimeout = 5 * time.Second

// closeSession attaches to session on the server at addr and closes it,
// within closeTimeout (or ctx, if it ends sooner).
func closeSession(ctx context.Context, addr string, session int64, passwd []byte, timeout time.Duration) (closeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	c, done, err := cluster.DialBounded(ctx, addr, closeTimeout)
	if err != nil {
		return closeResult{}, fmt.Errorf("close session %s on %s: %w", sessionHex(session), addr, err)
	}
	defer done()

	var res closeResult
	if err := writeFrame(c, connectRequest(session, passwd, timeout)); err != nil {
		return res, fmt.Errorf("connect request for %s to %s: %w", sessionHex(session), addr, err)
	}
	body, err := readFrame(c)
	if err != nil {
		return res, fmt.Errorf("connect response for %s from %s: %w", sessionHex(session), addr, err)
	}
	if len(body) < 16 {
		return res, fmt.Errorf("connect response from %s: %d bytes, too short", addr, len(body))
	}
	got := int64(binary.BigEndian.Uint64(body[8:16]))
	res.Timeout = time.Duration(binary.BigEndian.Uint32(body[4:8])) * time.Millisecond
	if got == 0 {
		return res, fmt.Errorf("attach to %s on %s: %w", sessionHex(session), addr, errSessionRefused)
	}
	if got != session {
		return res, fmt.Errorf("attach to %s on %s: server gave session %s", sessionHex(session), addr, sessionHex(got))
	}

	const xid = 1
	req := make([]byte, 8)
	binary.BigEndian.PutUint32(req[0:4], xid)
	op := int32(opCloseSession)
	binary.BigEndian.PutUint32(req[4:8], uint32(op))
	res.Sent = time.Now()
	if err := writeFrame(c, req); err != nil {
		return res, fmt.Errorf("closeSession %s on %s: %w", sessionHex(session), addr, err)
	}
	for {
		rep, err := readFrame(c)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return res, fmt.Errorf("closeSession %s on %s: %w: %w", sessionHex(session), addr, errReplyLost, err)
		}
		if err != nil {
			return res, fmt.Errorf("closeSession %s on %s: reply: %w", sessionHex(session), addr, err)
		}
		if len(rep) < 16 {
			return res, fmt.Errorf("closeSession reply from %s: %d bytes, too short", addr, len(rep))
		}
		// Reply header: xid int32, zxid int64, err int32. Notifications
		// (xid -1) and pings (-2) may come first.
		if int32(binary.BigEndian.Uint32(rep[0:4])) != xid {
			continue
		}
		res.Zxid = int64(binary.BigEndian.Uint64(rep[4:12]))
		if code := int32(binary.BigEndian.Uint32(rep[12:16])); code != 0 {
			return res, fmt.Errorf("closeSession %s on %s: server error %d", sessionHex(session), addr, code)
		}
		return res, nil
	}
}

// connectRequest is a ConnectRequest body: protocolVersion int32,
// lastZxidSeen int64, timeOut int32, sessionId int64, passwd (int32 length
// and bytes), readOnly byte. lastZxidSeen 0 is never ahead of a server, so
// no server refuses us for lagging behind the client.
func connectRequest(session int64, passwd []byte, timeout time.Duration) []byte {
	b := make([]byte, 0, 29+len(passwd))
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(timeout.Milliseconds()))
	b = binary.BigEndian.AppendUint64(b, uint64(session))
	b = binary.BigEndian.AppendUint32(b, uint32(len(passwd)))
	b = append(b, passwd...)
	return append(b, 0)
}

func writeFrame(w io.Writer, body []byte) error {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	_, err := w.Write(append(b, body...))
	return err
}

// maxFrame bounds a frame read by the handshake: replies to it are tiny.
const maxFrame = 1 << 16

func readFrame(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

// serversListing asks every server for its connections (four-letter word
// cons, each bounded by probeTimeout) and returns the addresses of those
// that list session, and of those that gave no list: no answer, or an
// answer that is not a list of connections (a server not serving, or one
// that does not allow cons), which must not pass for "not listed".
func serversListing(ctx context.Context, addrs []string, session int64) (listing, silent []string) {
	sid := sessionHex(session)
	for _, a := range addrs {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		out, err := cluster.FourLetter(pctx, a, "cons")
		cancel()
		var sessions []string
		if err == nil {
			sessions, err = cluster.ParseCons(out)
		}
		switch {
		case err != nil:
			silent = append(silent, a)
		case slices.Contains(sessions, sid):
			listing = append(listing, a)
		}
	}
	return listing, silent
}

// unlistedTimeout bounds how long a closed session may stay in cons: the
// server drops the connections of a closed session asynchronously (their
// close is queued to the selector thread), so one may still be listed for
// a moment after the client has already been told its session expired.
const unlistedTimeout = 2 * time.Second

// waitUnlisted polls cons on addrs until no server lists session or
// timeout passes, and returns the last listing and how long it waited.
func waitUnlisted(ctx context.Context, addrs []string, session int64, timeout time.Duration) (listing, silent []string, waited time.Duration) {
	start := time.Now()
	for {
		listing, silent = serversListing(ctx, addrs, session)
		waited = time.Since(start)
		if len(listing) == 0 || waited >= timeout || !ctxsleep.Sleep(ctx, watchEvery) {
			return listing, silent, waited
		}
	}
}
