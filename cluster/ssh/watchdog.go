package ssh

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	iptchain "github.com/zkchaos/zkchaos/cluster/chain"
)

// Why a watchdog on every host. The controller's janitor heals what is on
// the controller's machine, but it cannot reach a host whose link is lost,
// and it dies with the machine. So each host heals itself: when the
// cluster is made, a small shell loop is started there (detached from the
// SSH session with setsid and nohup), and the controller touches a lease
// file in the server's directory about every second. When the lease is
// older than the lease period, the loop undoes everything the run made on
// that host, in the order that leaves no half-state: the partition chain
// (unhooked, flushed, deleted), the JVM (continued, then killed, so a
// paused server does not linger as a stopped process), the server's
// directory. A normal end removes the directory first, and the loop,
// seeing it gone, exits.

// LeasePeriod is how long a host waits for a lease refresh before it
// heals itself; the controller refreshes every LeaseRefresh.
const (
	LeasePeriod  = 5 * time.Second
	LeaseRefresh = time.Second
)

// healScript undoes everything of the server whose directory is dir and
// whose chain is chain: the same steps for the watchdog and for Close.
// It kills only processes whose command line names dir's zoo.cfg: this
// run's server, never a recycled PID.
func healScript(dir, chain string) string {
	return fmt.Sprintf(`D=%[1]s
%[2]sfor pid in $(pgrep -f -- "$D/zoo.cfg"); do kill -CONT $pid; kill -KILL $pid; done
rm -rf $D; rmdir $(dirname $D) 2>/dev/null
true
`, Quote(dir), iptchain.Remove(chain))
}

// watchdogScript is the loop (run with sh on the host as the login user):
// it records its PID, and heals once the lease is older than period (in
// milliseconds, by GNU stat and date), or exits when the directory is
// gone (the run ended normally).
func watchdogScript(dir, chain string, period time.Duration) string {
	return fmt.Sprintf(`D=%[1]s; P=%[2]d
echo $$ >$D/watchdog.pid
while :; do
  sleep 1
  [ -d $D ] || exit 0
  m=$(stat -c %%.3Y $D/lease 2>/dev/null | tr -d .)
  [ -n "$m" ] && [ $(( $(date +%%s%%3N) - m )) -lt $P ] && continue
  %[3]s
  exit 0
done
`, Quote(dir), period.Milliseconds(), healScript(dir, chain))
}

// startWatchdog writes the loop into the server's directory and starts
// it detached; the lease is touched first, so it starts fresh.
func startWatchdog(ctx context.Context, h *Host, dir, chain string, period time.Duration) error {
	script := fmt.Sprintf(`D=%[1]s
cat >$D/watchdog.sh
touch $D/lease
setsid nohup sh $D/watchdog.sh >/dev/null 2>&1 </dev/null &
for i in $(seq 50); do [ -s $D/watchdog.pid ] && exit 0; sleep 0.1; done
echo "watchdog did not start" >&2; exit 1
`, Quote(dir))
	if _, err := h.Run(ctx, script, []byte(h.preamble()+watchdogScript(dir, chain, period))); err != nil {
		return fmt.Errorf("start watchdog: %w", err)
	}
	return nil
}

// stopWatchdog ends the loop (before Close removes what it guards).
func stopWatchdog(ctx context.Context, h *Host, dir string) error {
	script := fmt.Sprintf(`D=%[1]s
pid=$(cat $D/watchdog.pid 2>/dev/null) || exit 0
if tr '\0' ' ' </proc/$pid/cmdline 2>/dev/null | grep -q -- "$D/watchdog.sh"; then kill $pid; fi
rm -f $D/watchdog.pid
`, Quote(dir))
	_, err := h.Run(ctx, script, nil)
	return err
}

// leaser refreshes every host's lease until stopped.
type leaser struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// leaseLoop runs on a host for the whole run, in one SSH session: it
// touches the lease for every line the controller sends, and ends when
// the session does (the controller stopped or died, the link broke).
// One session rather than a command a second: starting a session costs a
// login shell on the host.
const leaseLoop = `while read -r _; do touch $D/lease || exit 1; done`

// startLeaser sends each host a line every LeaseRefresh, each host on its
// own so a slow host does not starve the others' leases. A failed
// session is logged and started again: meanwhile, after the lease
// period, that host heals itself.
func startLeaser(nodes []*Node, log *slog.Logger) *leaser {
	ctx, cancel := context.WithCancel(context.Background())
	l := &leaser{cancel: cancel}
	for _, n := range nodes {
		l.wg.Go(func() {
			for ctx.Err() == nil {
				err := n.host.Feed(ctx, fmt.Sprintf("D=%s\n%s", Quote(n.dir), leaseLoop), LeaseRefresh)
				if ctx.Err() != nil {
					return
				}
				log.Warn("lease refresh failed: the host heals itself after the lease period", "host", n.host.Name, "period", LeasePeriod, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(LeaseRefresh):
				}
			}
		})
	}
	return l
}

// stop ends the refreshes and waits for them.
func (l *leaser) stop() {
	l.cancel()
	l.wg.Wait()
}
