package register

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Client talks to a register over HTTP. It is safe for concurrent use.
type Client struct {
	base string
	auth string // the Authorization header, "" without a secret
	http *http.Client
}

// NewClient returns a client for the register at baseURL ("http://host:port"
// or just "host:port"). timeout bounds each request on top of the ctx.
// secret is the run's register secret (SecretEnv), sent with every call;
// a register started with one refuses calls without it.
func NewClient(baseURL string, timeout time.Duration, secret string) *Client {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	tr := &http.Transport{
		// Never through a proxy: the register lives on the run's private
		// address (198.18.0.0/15), which an HTTP_PROXY from the environment
		// would happily capture, making partitions meaningless.
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Client{
		base: strings.TrimRight(baseURL, "/"),
		auth: bearer(secret),
		http: &http.Client{Transport: tr, Timeout: timeout},
	}
}

// StatusError is a definite answer from the register that the request was
// refused (or failed inside the register). Only a 4xx is definite: the
// register refuses those before logging anything, so the operation surely
// did not happen.
type StatusError struct {
	Op         string
	StatusCode int
	Message    string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("register %s: HTTP %d: %s", e.Op, e.StatusCode, e.Message)
}

// IsDefinite reports whether err proves the operation did not take effect
// (a 4xx from the register: history records fail). Anything else — timeout,
// refused connection, reset, 5xx, an unreadable reply — leaves the outcome
// unknown (history records info), since the entry may already be in the
// apply log.
func IsDefinite(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.StatusCode >= 400 && se.StatusCode < 500
}

// Write sends a write. A rejected write is not an error: it is a Reply with
// Accepted false.
func (c *Client) Write(ctx context.Context, req WriteRequest) (Reply, error) {
	var rep Reply
	if err := c.do(ctx, "write", http.MethodPost, "/write", req, &rep); err != nil {
		return Reply{}, err
	}
	return rep, nil
}

// Read sends a read; with a token it raises the fence (see the package
// comment). A rejected read is a Reply with Accepted false.
func (c *Client) Read(ctx context.Context, req ReadRequest) (Reply, error) {
	var rep Reply
	if err := c.do(ctx, "read", http.MethodPost, "/read", req, &rep); err != nil {
		return Reply{}, err
	}
	return rep, nil
}

// InitTasks creates (or extends) a service's task table. Tasks already in
// it are left as they are, so retrying an init of unknown outcome is safe.
func (c *Client) InitTasks(ctx context.Context, req InitRequest) (InitReply, error) {
	var rep InitReply
	if err := c.do(ctx, "tasks/init", http.MethodPost, "/tasks/init", req, &rep); err != nil {
		return InitReply{}, err
	}
	return rep, nil
}

// Claim claims a task under req.Term (req.Result must be empty). A refused
// claim is not an error: it is a TaskReply with Accepted false and a
// Reason. Errors are classified as for Write (IsDefinite): a reply dropped
// by the lost-reply fault is an indefinite error, since the claim is in
// the apply log.
func (c *Client) Claim(ctx context.Context, req TaskRequest) (TaskReply, error) {
	return c.task(ctx, "task/claim", req)
}

// Complete completes a task under req.Term with result id req.Result;
// otherwise as Claim. A refusal with ReasonDone carries the stored result
// for the caller to reuse.
func (c *Client) Complete(ctx context.Context, req TaskRequest) (TaskReply, error) {
	return c.task(ctx, "task/complete", req)
}

func (c *Client) task(ctx context.Context, op string, req TaskRequest) (TaskReply, error) {
	var rep TaskReply
	if err := c.do(ctx, op, http.MethodPost, "/"+op, req, &rep); err != nil {
		return TaskReply{}, err
	}
	return rep, nil
}

// Scan returns every task of a service and its term (nothing is logged).
func (c *Client) Scan(ctx context.Context, service string) (ScanReply, error) {
	var rep ScanReply
	if err := c.do(ctx, "task/scan", http.MethodPost, "/task/scan", ScanRequest{Service: service}, &rep); err != nil {
		return ScanReply{}, err
	}
	return rep, nil
}

// SetLostReply sets the lost-reply fault's share of claims and completes
// whose reply is dropped after they are committed (0 turns it off).
func (c *Client) SetLostReply(ctx context.Context, share float64) error {
	var rep LostReplyRequest
	if err := c.do(ctx, "faults/lost-reply", http.MethodPost, "/faults/lost-reply", LostReplyRequest{Share: share}, &rep); err != nil {
		return err
	}
	if rep.Share != share {
		return fmt.Errorf("register faults/lost-reply: share is %v, asked for %v", rep.Share, share)
	}
	return nil
}

// State returns every key the register has seen.
func (c *Client) State(ctx context.Context) (map[string]KeyState, error) {
	var st map[string]KeyState
	if err := c.do(ctx, "state", http.MethodGet, "/state", nil, &st); err != nil {
		return nil, err
	}
	return st, nil
}

// Healthy returns nil if the register answers and its apply log works.
func (c *Client) Healthy(ctx context.Context) error {
	var h Health
	if err := c.do(ctx, "healthz", http.MethodGet, "/healthz", nil, &h); err != nil {
		return err
	}
	if !h.OK {
		return fmt.Errorf("register healthz: not ok")
	}
	return nil
}

func (c *Client) do(ctx context.Context, op, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("register %s: encode request: %w", op, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("register %s: %w", op, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("register %s: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("register %s: read reply: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		var eb errorBody
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &eb) == nil && eb.Error != "" {
			msg = eb.Error
		}
		return &StatusError{Op: op, StatusCode: resp.StatusCode, Message: msg}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("register %s: decode reply: %w", op, err)
	}
	return nil
}
