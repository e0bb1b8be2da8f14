package nemesis

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"
)

// TestCloseSessionReplyLost: ZooKeeper drops every connection of a
// session when it commits the session's close, ours included, and the
// drop can overtake the reply. A server that attaches the session and
// then hangs up on the closeSession must give errReplyLost (the close
// went out, judge it by its effects), not a plain failure. The real
// server cannot be made to lose this race on demand, so a listener
// speaks just the two frames of the handshake.
func TestCloseSessionReplyLost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const session = int64(0x1234)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := readFrame(c); err != nil { // ConnectRequest
			return
		}
		// ConnectResponse: protocolVersion, timeOut, sessionId, passwd.
		resp := binary.BigEndian.AppendUint32(nil, 0)
		resp = binary.BigEndian.AppendUint32(resp, 3000)
		resp = binary.BigEndian.AppendUint64(resp, uint64(session))
		resp = binary.BigEndian.AppendUint32(resp, 16)
		resp = append(resp, make([]byte, 16)...)
		if writeFrame(c, resp) != nil {
			return
		}
		_, _ = readFrame(c) // closeSession, then hang up without a reply
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := closeSession(ctx, ln.Addr().String(), session, make([]byte, 16), 0)
	if !errors.Is(err, errReplyLost) {
		t.Fatalf("closeSession with the reply lost = %v; want errReplyLost", err)
	}
	if res.Sent.IsZero() {
		t.Error("the close went out but Sent is zero")
	}
}
