package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
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
