package pgfence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zkchaos/zkchaos/resource/register"
)

// The conditional statements, one per rule. The write of a fenced run is
// the textbook conditional UPDATE (docs/background.md#why-a-lock-needs-a-fence):
// one row updated means accepted. Beside
// fencing_token (the token of the last accepted write) the row keeps
// fence, the highest token an accepted read or write presented: a
// holder's read raises it, so a paused holder that read before the next
// holder cannot write after that holder's read (resource/register/types.go has the
// lost update this prevents). strict is that textbook clause as it
// stands, fencing_token < token (one write per grant); on lets one grant write again (<=), as the
// register's on does.
const (
	writeStrict = `UPDATE resource SET value = $2, fencing_token = $3, fence = GREATEST(fence, $3)
 WHERE resource_id = $1 AND fencing_token < $3 AND fence <= $3`
	writeOn = `UPDATE resource SET value = $2, fencing_token = $3, fence = GREATEST(fence, $3)
 WHERE resource_id = $1 AND fencing_token <= $3 AND fence <= $3`
	// writeOff is the unfenced write: no token condition.
	writeOff = `UPDATE resource SET value = $2, fencing_token = $3, fence = GREATEST(fence, $3)
 WHERE resource_id = $1`
	writeOffNoToken = `UPDATE resource SET value = $2, fencing_token = -1 WHERE resource_id = $1`
	readFenced      = `UPDATE resource SET fence = $2 WHERE resource_id = $1 AND fence <= $2`
	readOff         = `UPDATE resource SET fence = GREATEST(fence, $2) WHERE resource_id = $1`

	// lockRow takes the row's lock for the transaction, counts the
	// entry and returns the state before it: the counter moves in the
	// transaction that writes the audit row, so it has no gaps (a
	// sequence's nextval is not rolled back), and the exporter can tell
	// "row n not committed yet" from "row n will never exist".
	lockRow = `UPDATE resource SET counter = counter + 1 WHERE resource_id = $1
 RETURNING value, fencing_token, fence, counter`
	newRow = `INSERT INTO resource (resource_id) VALUES ($1) ON CONFLICT DO NOTHING`

	insertAudit = `INSERT INTO audit (resource_id, n, request_id, op, token, value, process, pid, accepted, reason,
 prev_value, prev_token, prev_fence, mode, wall_ns)
 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
 (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint)`
)

// statement is the conditional UPDATE of o under mode and its arguments.
func statement(mode string, o op) (string, []any, error) {
	switch {
	case o.kind == register.OpRead && !o.hasToken:
		return "", nil, nil // the controller's final read changes nothing
	case o.kind == register.OpRead && mode == register.ModeOff:
		return readOff, []any{o.key, o.token}, nil
	case o.kind == register.OpRead:
		return readFenced, []any{o.key, o.token}, nil
	case o.kind != register.OpWrite:
		return "", nil, fmt.Errorf("postgres: unknown op %q", o.kind)
	case !o.hasToken && mode != register.ModeOff:
		return "", nil, fmt.Errorf("postgres: token required on a write in fencing mode %s", mode)
	case !o.hasToken:
		return writeOffNoToken, []any{o.key, o.value}, nil
	case mode == register.ModeStrict:
		return writeStrict, []any{o.key, o.value, o.token}, nil
	case mode == register.ModeOn:
		return writeOn, []any{o.key, o.value, o.token}, nil
	default:
		return writeOff, []any{o.key, o.value, o.token}, nil
	}
}

// apply runs o in one transaction: lock and count the row, the
// conditional UPDATE (its row count is the decision), the audit row, commit.
// register.Decide re-checks the database's decision: the two must agree,
// or the exported log would not replay, so a disagreement is an error
// and nothing is committed.
func (c *Client) apply(ctx context.Context, conn *pgx.Conn, o op) (register.Reply, error) {
	sql, args, err := statement(c.mode, o)
	if err != nil {
		return register.Reply{}, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return register.Reply{}, fmt.Errorf("postgres begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit a no-op
	prev, n, err := lock(ctx, tx, o.key)
	if err != nil {
		return register.Reply{}, err
	}
	accepted := true
	if sql != "" {
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil {
			return register.Reply{}, fmt.Errorf("postgres %s: %w", o.kind, err)
		}
		accepted = tag.RowsAffected() == 1
	}
	want, reason := register.Decide(c.mode, o.kind, prev, o.hasToken, o.token)
	if want != accepted {
		return register.Reply{}, fmt.Errorf("postgres %s of %s: the database decided accepted=%v, register.Decide says %v (%s)", o.kind, o.key, accepted, want, reason)
	}
	e := entry(o, prev, accepted, reason, c.mode)
	next, err := register.ApplyEntry(prev, e)
	if err != nil {
		return register.Reply{}, err
	}
	var tok *int64
	if o.hasToken {
		tok = &o.token
	}
	if _, err := tx.Exec(ctx, insertAudit, o.key, n, o.request, o.kind, tok, e.Value, o.process, o.pid,
		accepted, reason, prev.Value, prev.Token, prev.Fence, c.mode); err != nil {
		return register.Reply{}, fmt.Errorf("postgres audit: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return register.Reply{}, fmt.Errorf("postgres commit: %w", err)
	}
	return reply(next, accepted, reason, n), nil
}

// lock locks the key's row (creating it on first use) and returns its
// state before this entry and the entry's number.
func lock(ctx context.Context, tx pgx.Tx, key string) (register.KeyState, int64, error) {
	for range 2 {
		var st register.KeyState
		var n int64
		err := tx.QueryRow(ctx, lockRow, key).Scan(&st.Value, &st.Token, &st.Fence, &n)
		if err == nil {
			return st, n, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return st, 0, fmt.Errorf("postgres lock %s: %w", key, err)
		}
		if _, err := tx.Exec(ctx, newRow, key); err != nil {
			return st, 0, fmt.Errorf("postgres create %s: %w", key, err)
		}
	}
	return register.KeyState{}, 0, fmt.Errorf("postgres lock %s: row missing after insert", key)
}

// entry is o as the apply log records it (Seq and Wall are the
// exporter's to fill).
func entry(o op, prev register.KeyState, accepted bool, reason, mode string) register.Entry {
	e := register.Entry{Op: o.kind, Key: o.key, Token: register.NoToken, HasToken: o.hasToken, Value: o.value,
		Process: o.process, PID: o.pid, Accepted: accepted, Reason: reason,
		PrevValue: prev.Value, PrevToken: prev.Token, PrevFence: prev.Fence, Mode: mode, Request: o.request}
	if o.hasToken {
		e.Token = o.token
	}
	if o.kind == register.OpRead {
		e.Value = prev.Value
	}
	return e
}

// reply is what the register would answer for the entry.
func reply(next register.KeyState, accepted bool, reason string, n int64) register.Reply {
	return register.Reply{Accepted: accepted, Value: next.Value, Token: next.Token, Fence: next.Fence, Reason: reason, Seq: n}
}

// original answers a retried request from the audit row its first attempt
// wrote, after checking that the retry asks for the same thing (a request
// id reused for another request is a client's bug, not a retry).
func original(ctx context.Context, conn *pgx.Conn, o op) (register.Reply, error) {
	rows, err := conn.Query(ctx, selectAudit+` WHERE request_id = $1`, o.request)
	if err != nil {
		return register.Reply{}, fmt.Errorf("postgres: read the original of request %s: %w", o.request, err)
	}
	found, err := pgx.CollectRows(rows, scanRow)
	if err != nil || len(found) != 1 {
		return register.Reply{}, fmt.Errorf("postgres: the original of request %s: %d rows, %v", o.request, len(found), err)
	}
	r := found[0]
	e := r.entry()
	if e.Op != o.kind || e.Key != o.key || e.HasToken != o.hasToken || (o.hasToken && e.Token != o.token) ||
		(o.kind == register.OpWrite && e.Value != o.value) {
		return register.Reply{}, fmt.Errorf("postgres: request id %s was used for another request (%s %s)", o.request, e.Op, e.Key)
	}
	next, err := register.ApplyEntry(register.KeyState{Value: e.PrevValue, Token: e.PrevToken, Fence: e.PrevFence}, e)
	if err != nil {
		return register.Reply{}, err
	}
	return reply(next, e.Accepted, e.Reason, r.n), nil
}
