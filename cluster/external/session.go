package external

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// grantFormat is the message go-zookeeper logs once a session is
// established; its second argument is the timeout the server granted,
// in milliseconds. The client has no getter for it, so the log call is
// where it is read (the arguments, not the formatted text).
const grantFormat = "authenticated: id=%d, timeout=%d"

// GrantedTimeout opens one session on the ensemble at addrs asking for
// asked, and returns the session timeout the servers granted. A server
// clamps what a client asks into [minSessionTimeout, maxSessionTimeout]
// of its own configuration, which the harness does not control on an
// ensemble it does not run: a pause meant to outlast a session (twice
// --session-timeout) may then expire nobody, and a run would test less
// than its flags say.
func GrantedTimeout(ctx context.Context, addrs []string, asked time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout+asked)
	defer cancel()
	g := &grantLog{got: make(chan time.Duration, 1)}
	conn, _, err := zk.Connect(addrs, asked, zk.WithLogger(g))
	if err != nil {
		return 0, fmt.Errorf("open a session: %w", err)
	}
	defer conn.Close()
	select {
	case d := <-g.got:
		return d, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("open a session: no session established within %s", probeTimeout+asked)
	}
}

// grantLog takes the granted timeout from go-zookeeper's log calls and
// drops the rest of its chatter.
type grantLog struct {
	once sync.Once
	got  chan time.Duration
}

func (g *grantLog) Printf(format string, args ...any) {
	if format != grantFormat || len(args) != 2 {
		return
	}
	if ms, ok := args[1].(int32); ok {
		g.once.Do(func() { g.got <- time.Duration(ms) * time.Millisecond })
	}
}
