// Package pgfence is PostgreSQL as the run's fenced resource (--resource
// postgres): the schema, the conditional UPDATE of
// docs/background.md#why-a-lock-needs-a-fence with an
// audit row in the same transaction (client.go), the export of the audit
// table into the register's apply-log format (export.go), and the server
// itself, initdb and postgres run as the postgres system user in the run's
// namespace (server.go).
//
// The key state mirrors the register's (resource/register/types.go): value,
// fencing_token (the token of the last accepted write, the textbook's column)
// and fence (the highest token any accepted read or write presented), so
// that the exported log replays with register.ReplayAll and every
// checker reads it unchanged.
package pgfence

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zkchaos/zkchaos/resource/register"
)

// User is the role the harness and the workers connect as (made by
// initdb, with the run's secret as its password).
const User = "zkchaos"

// Database is the database every table lives in (initdb's own).
const Database = "postgres"

// schemaSQL is the resource and its audit. audit's primary key
// (resource_id, n) is the apply log's order per resource; request_id's
// unique constraint is the idempotency that fencing cannot give
// (docs/background.md#exactly-once-effects): a retried request
// is refused by it and answered from the row the first attempt wrote.
const schemaSQL = `
CREATE TABLE settings (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    mode     text NOT NULL
);
CREATE TABLE resource (
    resource_id   text PRIMARY KEY,
    value         bigint NOT NULL DEFAULT 0,
    fencing_token bigint NOT NULL DEFAULT -1,
    fence         bigint NOT NULL DEFAULT -1,
    counter       bigint NOT NULL DEFAULT 0
);
CREATE TABLE audit (
    resource_id text    NOT NULL REFERENCES resource,
    n           bigint  NOT NULL,
    request_id  text    NOT NULL CONSTRAINT audit_request_once UNIQUE,
    op          text    NOT NULL,
    token       bigint,
    value       bigint  NOT NULL,
    process     integer NOT NULL,
    pid         integer NOT NULL,
    accepted    boolean NOT NULL,
    reason      text    NOT NULL DEFAULT '',
    prev_value  bigint  NOT NULL,
    prev_token  bigint  NOT NULL,
    prev_fence  bigint  NOT NULL,
    mode        text    NOT NULL,
    wall_ns     bigint  NOT NULL,
    PRIMARY KEY (resource_id, n)
);`

// InitSchema creates the tables and records the run's fencing mode,
// which every client reads from the database: whether writes are fenced
// is the resource's policy, not each worker's choice.
func InitSchema(ctx context.Context, conn *pgx.Conn, mode string) error {
	switch mode {
	case register.ModeOff, register.ModeOn, register.ModeStrict:
	default:
		return fmt.Errorf("postgres schema: unknown fencing mode %q", mode)
	}
	if _, err := conn.Exec(ctx, schemaSQL); err != nil {
		return fmt.Errorf("postgres schema: %w", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO settings (mode) VALUES ($1)`, mode); err != nil {
		return fmt.Errorf("postgres schema: fencing mode: %w", err)
	}
	return nil
}
