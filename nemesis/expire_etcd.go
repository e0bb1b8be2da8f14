package nemesis

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/history"
)

// revokeLease is expire-holder on etcd: the holder's session is its lease
// (the worker reports the lease id as its session), and revoking it is
// etcd's expiry: the server deletes every key attached to it, the lock
// key among them, and the next waiter is granted, while the holder keeps
// running. Sent through etcd's JSON gateway (POST /v3/lease/revoke), so
// the nemesis needs no etcd client; verified by the worker reporting its
// session expired.
func revokeLease(ctx context.Context, ws Workers, w Worker, addr, target string) (*Effect, error) {
	v := history.Value{PID: w.PID, Target: target, Session: sessionHex(w.Session), TargetProcess: history.Int(w.Process)}
	undo := func(ctx context.Context) (history.Value, error) { return expireEnd(ctx, ws, w, v) }
	start := time.Now()
	body := fmt.Sprintf(`{"ID":"%d"}`, w.Session)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v3/lease/revoke", strings.NewReader(body))
	if err != nil {
		return nil, withTarget(v, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The revoke may or may not have been applied.
		return &Effect{Value: v, Undo: undo}, fmt.Errorf("revoke lease %s on %s: %w", sessionHex(w.Session), addr, err)
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		// etcd refuses a lease it does not know: it ended some other way.
		return nil, withTarget(v, fmt.Errorf("%w: revoke lease %s on %s: %s %s", ErrNoTarget, sessionHex(w.Session), addr, resp.Status, strings.TrimSpace(string(answer))))
	}
	v.Detail = fmt.Sprintf("revoked lease %s on %s (%s)", sessionHex(w.Session), addr, took.Round(time.Microsecond))
	eff := &Effect{Value: v, Undo: undo}
	st, after, seen := waitState(ctx, ws, w.PID, w.Session, expireVerifyTimeout, "expired")
	if !seen {
		eff.Value.Detail += fmt.Sprintf("; worker's last state for the session %q after %s", st, after.Round(time.Millisecond))
		return eff, fmt.Errorf("worker pid %d did not report lease %s expired within %s (last %q)", w.PID, sessionHex(w.Session), expireVerifyTimeout, st)
	}
	eff.Value.Detail += fmt.Sprintf("; worker reported expired %s after the revoke", (took + after).Round(time.Millisecond))
	return eff, nil
}
