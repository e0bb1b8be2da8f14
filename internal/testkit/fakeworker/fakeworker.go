// Package fakeworker is a scripted worker for tests of the controller side:
// a real OS process (the test binary re-executed, see Main) that speaks the
// worker protocol over real pipes, without ZooKeeper or a register, and
// misbehaves on request (answers late, reports a lost lock in the same
// write as a release answer, floods its stderr, writes an over-long line,
// ignores the end of its input). Tests of worker/ and runner/ share it so
// the protocol is spoken by one program, not by two copies.
package fakeworker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// Env is the environment variable that turns a test binary into a fake
// worker; its value is the JSON Script.
const Env = "ZKCHAOS_FAKE_WORKER"

// Script says how the fake worker behaves. The zero Script grants every
// acquire, keeps a register value per key in memory, and exits 0 when its
// stdin closes.
type Script struct {
	// LostBeforeRelease: each release answer is preceded by a lost event
	// for the key, both lines in one write(2), as a recipe that learns of
	// the loss while releasing would write them.
	LostBeforeRelease bool `json:"lost_before_release,omitempty"`
	// DelayMS delays the answer to a request, by f (milliseconds). The
	// worker reads nothing meanwhile, as a worker busy with it would not.
	DelayMS map[string]int64 `json:"delay_ms,omitempty"`
	// DelayOnce applies DelayMS only to the first request of each f.
	DelayOnce bool `json:"delay_once,omitempty"`
	// StderrFlood is how many bytes of log lines the worker writes to
	// stderr right after its hello.
	StderrFlood int64 `json:"stderr_flood,omitempty"`
	// LongLine is the length of one stdout line (not JSON, no newline
	// until the end) written before the answer to the first request.
	LongLine int64 `json:"long_line,omitempty"`
	// IgnoreEOF keeps the worker alive after its stdin closes, until it is
	// killed.
	IgnoreEOF bool `json:"ignore_eof,omitempty"`
	// Protocol is the protocol version the hello names; 0 names none, as
	// a worker written before hellos carried one.
	Protocol int `json:"protocol,omitempty"`
}

// Encode renders s as the value of Env.
func (s Script) Encode() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a Script always encodes
	}
	return string(b)
}

// MaybeRun runs the fake worker and exits if the environment asks for
// one; a test's TestMain calls it first.
func MaybeRun() {
	js, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	var s Script
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		fmt.Fprintln(os.Stderr, "fakeworker: bad script:", err)
		os.Exit(255)
	}
	os.Exit(Run(s, os.Stdin, os.Stdout, os.Stderr))
}

// request and message are the protocol's lines, as much as the fake needs.
type request struct {
	ID        int64  `json:"id"`
	F         string `json:"f"`
	Key       string `json:"key"`
	Value     *int64 `json:"value"`
	TimeoutMS int64  `json:"timeout_ms"`
}

type message struct {
	ID           int64  `json:"id,omitempty"`
	Type         string `json:"type,omitempty"`
	Event        string `json:"event,omitempty"`
	Key          string `json:"key,omitempty"`
	Token        *int64 `json:"token,omitempty"`
	Node         string `json:"node,omitempty"`
	Value        *int64 `json:"value,omitempty"`
	Accepted     *bool  `json:"accepted,omitempty"`
	CurrentToken *int64 `json:"current_token,omitempty"`
	State        string `json:"state,omitempty"`
	Session      string `json:"session,omitempty"`
	PID          int    `json:"pid,omitempty"`
	Protocol     int    `json:"protocol,omitempty"`
	Error        string `json:"error,omitempty"`
}

// fake is the worker's state: one grant per key at most, a token counter,
// and the register values it pretends to hold.
type fake struct {
	s       Script
	out     io.Writer
	next    int64
	grants  map[string]int64
	values  map[string]int64
	delayed map[string]bool
	longOut bool
}

// Run speaks the protocol on in and out until in ends; it returns the
// exit code.
func Run(s Script, in io.Reader, out, errOut io.Writer) int {
	f := &fake{s: s, out: out, next: 100, grants: map[string]int64{}, values: map[string]int64{}, delayed: map[string]bool{}}
	if err := f.write(message{Event: "hello", PID: os.Getpid(), Session: "0x1", Protocol: s.Protocol}); err != nil {
		return 1
	}
	flood(errOut, s.StderrFlood)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			_ = f.write(message{Type: "fail", Error: "malformed request"})
			continue
		}
		if err := f.answer(r); err != nil {
			return 1
		}
	}
	if s.IgnoreEOF {
		for {
			time.Sleep(time.Hour)
		}
	}
	return 0
}

func (f *fake) answer(r request) error {
	if d := f.s.DelayMS[r.F]; d > 0 && !(f.s.DelayOnce && f.delayed[r.F]) {
		f.delayed[r.F] = true
		time.Sleep(time.Duration(d) * time.Millisecond)
	}
	if f.s.LongLine > 0 && !f.longOut {
		f.longOut = true
		if _, err := f.out.Write(append(bytes.Repeat([]byte("x"), int(f.s.LongLine)), '\n')); err != nil {
			return err
		}
	}
	node := fmt.Sprintf("/fake/%s/lock-%010d", r.Key, f.grants[r.Key])
	switch r.F {
	case "acquire":
		f.next++
		f.grants[r.Key] = f.next
		tok := f.next
		return f.write(message{ID: r.ID, Type: "ok", Key: r.Key, Token: &tok, Node: fmt.Sprintf("/fake/%s/lock-%010d", r.Key, tok)})
	case "read", "write":
		tok, ok := f.grants[r.Key]
		if !ok {
			return f.write(message{ID: r.ID, Type: "fail", Error: "not holding " + r.Key})
		}
		if r.F == "write" && r.Value != nil {
			f.values[r.Key] = *r.Value
		}
		v, yes := f.values[r.Key], true
		return f.write(message{ID: r.ID, Type: "ok", Key: r.Key, Token: &tok, Value: &v, Accepted: &yes, CurrentToken: &tok})
	case "release":
		tok, ok := f.grants[r.Key]
		if !ok {
			return f.write(message{ID: r.ID, Type: "fail", Error: "not held"})
		}
		delete(f.grants, r.Key)
		rel := message{ID: r.ID, Type: "ok", Key: r.Key, Token: &tok, Node: node}
		if f.s.LostBeforeRelease {
			return f.write(message{Event: "lost", Key: r.Key, Token: &tok, Node: node, State: "expired"}, rel)
		}
		return f.write(rel)
	}
	return f.write(message{ID: r.ID, Type: "fail", Error: fmt.Sprintf("unknown f %q", r.F)})
}

// write sends ms as consecutive lines in a single write(2).
func (f *fake) write(ms ...message) error {
	var buf bytes.Buffer
	for _, m := range ms {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	_, err := f.out.Write(buf.Bytes())
	return err
}

// FloodLine is the line a StderrFlood repeats: n bytes of flood are
// ceil(n / len(FloodLine)) whole lines.
const FloodLine = "fakeworker: flooding the log with a line of text that says nothing at all\n"

// flood writes at least n bytes of FloodLine to w.
func flood(w io.Writer, n int64) {
	line := []byte(FloodLine)
	for written := int64(0); written < n; written += int64(len(line)) {
		if _, err := w.Write(line); err != nil {
			return
		}
	}
}
