package pgfence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zkchaos/zkchaos/resource/register"
)

// Client performs reads and writes on the PostgreSQL resource with the
// register's request and reply types, so a worker swaps one for the
// other. It holds one connection, opened on first use and again after a
// failure; calls are serialised (a worker serves one request at a time).
type Client struct {
	cfg      *pgx.ConnConfig
	attempts int
	// timeout bounds each attempt (connecting included): a row locked
	// by a paused client's open transaction must not hold a call forever.
	timeout time.Duration

	mu   sync.Mutex
	conn *pgx.Conn
	mode string
}

// attemptsDefault is how often a call is tried with one request id: a
// second attempt after a lost connection is what the request id is for.
const attemptsDefault = 3

// NewClient parses dsn (a postgres:// URL without its password); the
// password is given apart, from the environment, never on a command line.
// timeout bounds each attempt of a call, connecting included.
func NewClient(dsn, password string, timeout time.Duration) (*Client, error) {
	cfg, err := ConnConfig(dsn, password, timeout)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, attempts: attemptsDefault, timeout: timeout}, nil
}

// ConnConfig is dsn with password and a connect timeout.
func ConnConfig(dsn, password string, timeout time.Duration) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres DSN: %w", err)
	}
	cfg.Password = password
	cfg.ConnectTimeout = timeout
	return cfg, nil
}

// Close closes the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drop()
}

func (c *Client) drop() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close(context.Background())
	c.conn = nil
	return err
}

// connect opens the connection and reads the run's fencing mode. Under mu.
func (c *Client) connect(ctx context.Context) (*pgx.Conn, error) {
	if c.conn != nil && !c.conn.IsClosed() {
		return c.conn, nil
	}
	conn, err := pgx.ConnectConfig(ctx, c.cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres connect: %w", err)
	}
	if c.mode == "" {
		if err := conn.QueryRow(ctx, `SELECT mode FROM settings`).Scan(&c.mode); err != nil {
			conn.Close(context.Background())
			return nil, fmt.Errorf("postgres: read the fencing mode: %w", err)
		}
	}
	c.conn = conn
	return conn, nil
}

// Connect opens the connection now rather than at the first request,
// which a worker makes inside its critical section.
func (c *Client) Connect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	_, err := c.connect(cctx)
	return err
}

// op is one read or write with its request id.
type op struct {
	kind     string
	key      string
	value    int64
	hasToken bool
	token    int64
	process  int
	pid      int
	request  string
}

// Write is the fenced write (see apply). A rejected write is a Reply
// with Accepted false, not an error.
func (c *Client) Write(ctx context.Context, req register.WriteRequest) (register.Reply, error) {
	return c.Do(ctx, NewRequestID(), register.OpWrite, req.Key, req.Value, req.Token, req.Process, req.PID)
}

// Read is the read: with a token it raises the fence, as the register's
// does (resource/register/types.go says why); without one it is the controller's
// final read.
func (c *Client) Read(ctx context.Context, req register.ReadRequest) (register.Reply, error) {
	return c.Do(ctx, NewRequestID(), register.OpRead, req.Key, 0, req.Token, req.Process, req.PID)
}

// NewRequestID is a fresh request id.
func NewRequestID() string { return uuid.NewString() }

// Do performs one request under request id rid, trying again with the
// same id after a failure whose outcome is unknown (the connection broke,
// maybe after the commit): if the first attempt committed, the retry is
// refused by the unique constraint and answered as the original was, so
// the request is applied once (fencing alone would accept the retry:
// docs/background.md#exactly-once-effects). Errors are never definite
// (register.IsDefinite is false): the request may have been applied.
func (c *Client) Do(ctx context.Context, rid, kind, key string, value int64, token *int64, process, pid int) (register.Reply, error) {
	if key == "" {
		return register.Reply{}, errors.New("postgres: empty key")
	}
	o := op{kind: kind, key: key, value: value, process: process, pid: pid, request: rid}
	if token != nil {
		if *token < 0 {
			return register.Reply{}, fmt.Errorf("postgres: negative token %d", *token)
		}
		o.hasToken, o.token = true, *token
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	for range c.attempts {
		var rep register.Reply
		actx, cancel := context.WithTimeout(ctx, c.timeout)
		rep, err = c.attempt(actx, o)
		cancel()
		if err == nil {
			return rep, nil
		}
		_ = c.drop()
		if ctx.Err() != nil {
			break
		}
	}
	return register.Reply{}, err
}

// attempt is one try of o: apply it, or answer it from the audit row of
// an earlier attempt that committed.
func (c *Client) attempt(ctx context.Context, o op) (register.Reply, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return register.Reply{}, err
	}
	rep, err := c.apply(ctx, conn, o)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "audit_request_once" {
		return original(ctx, conn, o)
	}
	return rep, err
}

// State is every resource's state (the controller's log at the end).
func (c *Client) State(ctx context.Context) (map[string]register.KeyState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT resource_id, value, fencing_token, fence FROM resource`)
	if err != nil {
		return nil, fmt.Errorf("postgres state: %w", err)
	}
	out := map[string]register.KeyState{}
	var key string
	var st register.KeyState
	_, err = pgx.ForEachRow(rows, []any{&key, &st.Value, &st.Token, &st.Fence}, func() error {
		out[key] = st
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres state: %w", err)
	}
	return out, nil
}
