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

// FourLetter sends a four-letter word (srvr, mntr, ruok, ...) to a server
// and returns its whole answer. It is the one probe that works against any
// backend and never needs a session, so it cannot disturb what it observes.
// Without a deadline on ctx it gives up after 2 s.
func FourLetter(ctx context.Context, addr, cmd string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", cmd, addr, err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	// A cancelled ctx must unblock the read too, not only the dial.
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
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
