package pgfence

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/resource/register"
)

// selectAudit reads audit rows; scanRow is its one scanner.
const selectAudit = `SELECT resource_id, n, request_id, op, token, value, process, pid, accepted, reason,
 prev_value, prev_token, prev_fence, mode, wall_ns FROM audit a`

// newRows are the rows after each resource's last exported one, each
// resource's in counter order.
const newRows = selectAudit + ` JOIN unnest($1::text[], $2::bigint[]) AS l(id, last)
 ON a.resource_id = l.id AND a.n > l.last ORDER BY a.resource_id, a.n`

// auditRow is one row of audit.
type auditRow struct {
	key, request, op, reason, mode string
	n, value, prevValue, prevToken int64
	prevFence, wall                int64
	token                          *int64
	process, pid                   int32
	accepted                       bool
}

func scanRow(row pgx.CollectableRow) (auditRow, error) {
	var r auditRow
	err := row.Scan(&r.key, &r.n, &r.request, &r.op, &r.token, &r.value, &r.process, &r.pid, &r.accepted, &r.reason,
		&r.prevValue, &r.prevToken, &r.prevFence, &r.mode, &r.wall)
	return r, err
}

// entry is the row as an apply-log entry, without its Seq.
func (r auditRow) entry() register.Entry {
	e := register.Entry{Wall: r.wall, Op: r.op, Key: r.key, Token: register.NoToken, Value: r.value,
		Process: int(r.process), PID: int(r.pid), Accepted: r.accepted, Reason: r.reason,
		PrevValue: r.prevValue, PrevToken: r.prevToken, PrevFence: r.prevFence, Mode: r.mode, Request: r.request}
	if r.token != nil {
		e.Token, e.HasToken = *r.token, true
	}
	return e
}

// Exporter copies the audit table into an apply log (the register's
// format, register.EncodeEntry) while the run goes, so the online checks,
// the checkers after the run and `chaos check` later read one file, the
// same way whichever resource the run had. Per resource the rows go in
// counter order: since the counter moves under the row's lock in the
// transaction that writes the row, a snapshot that sees row n+1 sees row
// n, so whatever one query returns continues each resource's log without
// a hole. Rows of different resources are merged by their commit-time
// wall clock; Seq is the export's order, from 1 without gaps.
type Exporter struct {
	cfg  *pgx.ConnConfig
	conn *pgx.Conn
	f    *os.File
	seq  int64
	last map[string]int64
}

// NewExporter connects with cfg and creates the apply log at path.
func NewExporter(ctx context.Context, cfg *pgx.ConnConfig, path string) (*Exporter, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres export: connect: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres export: %w", err)
	}
	return &Exporter{cfg: cfg, conn: conn, f: f, last: map[string]int64{}}, nil
}

// Poll appends every row committed since the last poll and fsyncs; it
// returns how many.
func (x *Exporter) Poll(ctx context.Context) (int, error) {
	var ids []string
	rows, err := x.conn.Query(ctx, `SELECT resource_id FROM resource`)
	if err == nil {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		return 0, fmt.Errorf("postgres export: resources: %w", err)
	}
	lasts := make([]int64, len(ids))
	for i, id := range ids {
		lasts[i] = x.last[id]
	}
	rows, err = x.conn.Query(ctx, newRows, ids, lasts)
	if err != nil {
		return 0, fmt.Errorf("postgres export: audit: %w", err)
	}
	got, err := pgx.CollectRows(rows, scanRow)
	if err != nil {
		return 0, fmt.Errorf("postgres export: audit: %w", err)
	}
	if len(got) == 0 {
		return 0, nil
	}
	var buf []byte
	for _, r := range merge(got) {
		if r.n != x.last[r.key]+1 {
			return 0, fmt.Errorf("postgres export: %s: row %d after row %d (a gap in the counter)", r.key, r.n, x.last[r.key])
		}
		x.last[r.key] = r.n
		e := r.entry()
		x.seq++
		e.Seq = x.seq
		line, err := register.EncodeEntry(e)
		if err != nil {
			return 0, fmt.Errorf("postgres export: %w", err)
		}
		buf = append(buf, line...)
	}
	if _, err := x.f.Write(buf); err != nil {
		return 0, fmt.Errorf("postgres export: write: %w", err)
	}
	if err := x.f.Sync(); err != nil {
		return 0, fmt.Errorf("postgres export: fsync: %w", err)
	}
	return len(got), nil
}

// merge orders rows sorted by (resource, n) into one sequence that keeps
// each resource's order and otherwise goes by wall clock.
func merge(rows []auditRow) []auditRow {
	var heads [][]auditRow
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].key == rows[i].key {
			j++
		}
		heads = append(heads, rows[i:j])
		i = j
	}
	out := make([]auditRow, 0, len(rows))
	for len(out) < len(rows) {
		best := -1
		for k, h := range heads {
			if len(h) > 0 && (best < 0 || cmp.Compare(h[0].wall, heads[best][0].wall) < 0) {
				best = k
			}
		}
		out = append(out, heads[best][0])
		heads[best] = heads[best][1:]
	}
	return out
}

// pollTimeout bounds one poll, and stallLimit the time without a
// successful one: a server that stopped answering is an error, not a
// teardown that waits forever. A poll that outlasts its bound changed
// nothing (the log and the rows exported so far are written only after
// the query), so it is tried again until stallLimit: a loaded machine
// once held a poll's query past 10 s, and the run was a harness failure.
var (
	pollTimeout = 10 * time.Second
	stallLimit  = time.Minute
)

// Follow polls every poll until ctx ends, then until one more poll has
// succeeded (everything committed by then is in the log). A poll or a
// reconnection that times out is tried again, on a new connection if the
// timeout closed this one, until no poll has succeeded for stallLimit;
// any other error stops it.
func (x *Exporter) Follow(ctx context.Context, poll time.Duration) error {
	lastOK := time.Now()
	// once polls; it says whether the poll succeeded, and errs only when
	// the poll may not be tried again.
	once := func() (bool, error) {
		err := x.reconnect()
		if err == nil {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pollTimeout)
			_, err = x.Poll(pctx)
			cancel()
		}
		switch {
		case err == nil:
			lastOK = time.Now()
			return true, nil
		case errors.Is(err, context.DeadlineExceeded) && time.Since(lastOK) < stallLimit:
			return false, nil
		}
		return false, err
	}
	for {
		if _, err := once(); err != nil {
			return err
		}
		if !ctxsleep.Sleep(ctx, poll) {
			break
		}
	}
	// The last poll must succeed: it is what makes the log whole.
	for {
		if ok, err := once(); ok || err != nil {
			return err
		}
	}
}

// reconnect replaces a connection that a timed-out query closed; it
// connects for at most pollTimeout.
func (x *Exporter) reconnect() error {
	if !x.conn.IsClosed() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, x.cfg)
	if err != nil {
		return fmt.Errorf("postgres export: reconnect: %w", err)
	}
	x.conn = conn
	return nil
}

// Close closes the log and the connection.
func (x *Exporter) Close() error {
	return errors.Join(x.f.Close(), x.conn.Close(context.Background()))
}
