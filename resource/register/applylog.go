package register

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// KeyState is the state of one key, as GET /state reports it and as a
// replay of the apply log reconstructs it.
type KeyState struct {
	Value int64 `json:"value"`
	Token int64 `json:"token"`
	Fence int64 `json:"fence"`
}

// initialState is what a key holds before anything touched it.
var initialState = KeyState{Value: 0, Token: NoToken, Fence: NoToken}

// ReadApplyLog reads a whole apply log file. See ReadApplyLogFrom for what
// it tolerates.
func ReadApplyLog(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open apply log: %w", err)
	}
	defer f.Close()
	entries, err := ReadApplyLogFrom(f)
	if err != nil {
		return nil, fmt.Errorf("apply log %s: %w", path, err)
	}
	return entries, nil
}

// ReadApplyLogFrom parses an apply log. A last line without a newline that
// does not parse is dropped: the register was killed while writing it, so
// it was never fsync'd and never answered, and nothing depends on it. Any
// other damage (a bad line in the middle, a gap in Seq) means the ground
// truth cannot be trusted, so it is an error naming the line.
func ReadApplyLogFrom(r io.Reader) ([]Entry, error) {
	entries, _, _, err := parseLog(r)
	return entries, err
}

// parseLog is ReadApplyLogFrom for the register itself, which must also
// know where the good part ends (to cut off a torn last line before
// appending) and whether the last good line lacks its newline.
func parseLog(r io.Reader) (entries []Entry, end int64, needNewline bool, err error) {
	br := bufio.NewReader(r)
	var offset int64
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, 0, false, fmt.Errorf("read line %d: %w", lineNo, rerr)
		}
		if len(line) == 0 {
			return entries, offset, false, nil
		}
		terminated := line[len(line)-1] == '\n'
		e, perr := parseEntry(line)
		if perr != nil {
			if !terminated {
				// Torn final write: dropped, see above.
				return entries, offset, false, nil
			}
			return nil, 0, false, fmt.Errorf("line %d: bad entry: %w", lineNo, perr)
		}
		want := int64(len(entries)) + 1
		if e.Seq != want {
			return nil, 0, false, fmt.Errorf("line %d: seq %d, want %d (gap or reorder)", lineNo, e.Seq, want)
		}
		entries = append(entries, e)
		offset += int64(len(line))
		if !terminated {
			return entries, offset, true, nil
		}
	}
}

// parseEntry decodes one line of the log, with or without its newline.
func parseEntry(line []byte) (Entry, error) {
	var e Entry
	err := json.Unmarshal(bytes.TrimSuffix(line, []byte("\n")), &e)
	return e, err
}

// Replay rebuilds every key's state from an apply log (see ReplayAll).
func Replay(entries []Entry) (map[string]KeyState, error) {
	st, err := ReplayAll(entries)
	if err != nil {
		return nil, err
	}
	return st.Keys, nil
}

// Tables is everything a register holds: the keys of the lock workload and
// the services' task tables.
type Tables struct {
	Keys     map[string]KeyState
	Services map[string]ServiceState
}

// ReplayAll rebuilds the keys and the task tables from an apply log. It
// also checks that each key entry's Prev* fields match the state the
// entries before it produced, and that each claim and complete is what
// DecideTask says, so a log that was edited, or written by a buggy
// register, is caught here rather than silently trusted by a checker.
func ReplayAll(entries []Entry) (Tables, error) {
	t := Tables{Keys: make(map[string]KeyState), Services: make(map[string]ServiceState)}
	for _, e := range entries {
		if err := t.apply(e); err != nil {
			return Tables{}, fmt.Errorf("seq %d: %w", e.Seq, err)
		}
	}
	return t, nil
}

// apply replays one entry onto t.
func (t Tables) apply(e Entry) error {
	if isTaskOp(e.Op) {
		svc, ok := t.Services[e.Service]
		if !ok {
			svc = newService()
		}
		step, err := stepTaskEntry(svc, e)
		if err != nil {
			return err
		}
		t.Services[e.Service] = svc.apply(step)
		return nil
	}
	st, ok := t.Keys[e.Key]
	if !ok {
		st = initialState
	}
	if st.Value != e.PrevValue || st.Token != e.PrevToken || st.Fence != e.PrevFence {
		return fmt.Errorf("key %q: entry says previous state value=%d token=%d fence=%d, replay has value=%d token=%d fence=%d",
			e.Key, e.PrevValue, e.PrevToken, e.PrevFence, st.Value, st.Token, st.Fence)
	}
	next, err := applyEntry(st, e)
	if err != nil {
		return err
	}
	t.Keys[e.Key] = next
	return nil
}

// ApplyEntry is how entry e changes a key in state st: what the live
// register and Replay do, for a tool that builds an apply log itself
// (internal/testkit/synth's synthetic runs) so that its log replays.
func ApplyEntry(st KeyState, e Entry) (KeyState, error) { return applyEntry(st, e) }

// EncodeEntry is e as the register writes it to the apply log: one JSON
// line with its newline, byte for byte.
func EncodeEntry(e Entry) ([]byte, error) { return encodeLine(e) }

// applyEntry is the one place that says how an entry changes a key, shared
// by the live register and by Replay so that the two cannot disagree.
func applyEntry(st KeyState, e Entry) (KeyState, error) {
	switch e.Op {
	case OpWrite, OpRead:
	default:
		return st, fmt.Errorf("unknown op %q", e.Op)
	}
	if !e.Accepted {
		return st, nil
	}
	if e.HasToken && e.Token > st.Fence {
		st.Fence = e.Token
	}
	if e.Op == OpWrite {
		st.Value = e.Value
		if e.HasToken {
			st.Token = e.Token
		} else {
			// Only possible in mode off; the key then holds a write that
			// no grant vouches for.
			st.Token = NoToken
		}
	}
	return st, nil
}

// Decide is the register's accept rule for one read or write under mode,
// given the key's state before it: the one place the rule is written. The
// register applies it to every request, and the register model of the
// checkers (checker/linear) applies it to the history, so the two cannot
// disagree. It is pure so that tests (and anyone auditing a log) can
// re-check every logged decision. The reason is empty when accepted.
func Decide(mode, op string, st KeyState, hasToken bool, token int64) (bool, string) {
	if mode == ModeOff || !hasToken {
		// Tokenless writes never reach here in on/strict (rejected with
		// 400); tokenless reads are the controller's and are always let in.
		return true, ""
	}
	if token < st.Fence {
		return false, fmt.Sprintf("stale token %d < fence %d", token, st.Fence)
	}
	if mode == ModeStrict && op == OpWrite && token <= st.Token {
		return false, fmt.Sprintf("token %d <= last write token %d (strict: one write per grant)", token, st.Token)
	}
	return true, ""
}

// validMode reports whether m is one of the three modes.
func validMode(m string) bool {
	switch m {
	case ModeOff, ModeOn, ModeStrict:
		return true
	}
	return false
}
