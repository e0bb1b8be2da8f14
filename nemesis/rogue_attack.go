package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

// The attempts of rogue-client and how they are recorded. Each attempt is
// one ZooKeeper request; its outcome is what the server answered.

// Outcomes of an attempt.
const (
	// outcomeRefused: the server refused for lack of rights (NoAuth): the
	// protection worked.
	outcomeRefused = "refused"
	// outcomeDone: the server carried it out: damage.
	outcomeDone = "done"
	// outcomeFailed: a definite answer other than NoAuth (not empty, no
	// node, node exists): nothing changed, but not thanks to an ACL.
	outcomeFailed = "failed"
	// outcomeUnknown: no answer (connection lost, interrupted).
	outcomeUnknown = "unknown"
)

// attempt is one tampering request and what came of it.
type attempt struct {
	what, path, outcome, note string
	err                       error
}

func (a attempt) String() string {
	s := fmt.Sprintf("%s %s: %s", a.what, a.path, a.outcome)
	if a.err != nil {
		s += " (" + a.err.Error() + ")"
	}
	if a.note != "" {
		s += ", " + a.note
	}
	return s
}

// classify turns a server's answer into an outcome.
func classify(err error) string {
	switch {
	case err == nil:
		return outcomeDone
	case errors.Is(err, zk.ErrNoAuth):
		return outcomeRefused
	case errors.Is(err, zk.ErrNotEmpty), errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNodeExists),
		errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrInvalidACL):
		return outcomeFailed
	default:
		return outcomeUnknown
	}
}

// attack is one injection of rogue-client against one victim.
type attack struct {
	conn     *zk.Conn
	env      *Env
	root     string
	vic      victim
	attempts []attempt
	// forged are the nodes the rogue created in the queue.
	forged []string
}

// try makes one attempt and records it; it returns the attempt so the
// caller can go on from its outcome and annotate it (until the next
// attempt is recorded).
func (a *attack) try(what, path string, f func() error) *attempt {
	err := f()
	a.attempts = append(a.attempts, attempt{what: what, path: path, outcome: classify(err), err: err})
	return &a.attempts[len(a.attempts)-1]
}

// run makes every attempt in turn. The forgery comes before the reset,
// and the reset waits for the holder's release to consume the forged
// node, so that the one does not undo the evidence of the other.
func (a *attack) run(ctx context.Context) {
	a.try("delete the lock root", a.root, func() error { return a.conn.Delete(a.root, -1) })
	a.try("delete the key node", a.vic.keyNode, func() error { return a.conn.Delete(a.vic.keyNode, -1) })
	a.forge(ctx)
	a.reset(ctx)
}

// forge deletes the holder's node, waits for another worker to be granted
// the key, and puts a node back at the holder's exact path.
func (a *attack) forge(ctx context.Context) {
	node := a.vic.node
	del := a.try("forge: delete the holder's lock node", node, func() error { return a.conn.Delete(node, -1) })
	switch del.outcome {
	case outcomeDone:
		del.note = a.waitIntruder(ctx)
	case outcomeFailed:
		// Gone already (released meanwhile): there is no grant to forge,
		// and a node put there would only block the queue.
		del.note = "nothing to forge"
		return
	}
	cr := a.try("forge: create a node at the holder's path", node, func() error {
		_, err := a.conn.Create(node, nil, 0, zk.WorldACL(zk.PermAll))
		return err
	})
	if cr.outcome == outcomeDone {
		a.forged = append(a.forged, node)
		cr.note = a.waitConsumed(ctx, node)
	}
}

// waitIntruder waits until the controller sees another process holding
// the victim's key, and says who and when.
func (a *attack) waitIntruder(ctx context.Context) string {
	start := time.Now()
	for {
		for _, h := range a.env.Targets.Holders() {
			if h.Key == a.vic.key && h.Process != a.vic.process {
				return fmt.Sprintf("process %d granted %s %s later (token %d) while process %d still holds it",
					h.Process, a.vic.key, time.Since(start).Round(time.Millisecond), h.Token, a.vic.process)
			}
		}
		if time.Since(start) > rogueGrantWait || !ctxsleep.Sleep(ctx, 2*time.Millisecond) {
			return fmt.Sprintf("no other process granted %s within %s", a.vic.key, time.Since(start).Round(time.Millisecond))
		}
	}
}

// waitConsumed waits for the forged node to disappear, which is the
// holder's release deleting it (and so answering ok).
func (a *attack) waitConsumed(ctx context.Context, node string) string {
	start := time.Now()
	timer := time.NewTimer(rogueReleaseWait)
	defer timer.Stop()
	for {
		ok, _, ch, err := a.conn.ExistsW(node)
		switch {
		case err != nil:
			return "watching it: " + err.Error()
		case !ok:
			return fmt.Sprintf("deleted %s later: the holder's release found a node at its path", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ch:
		case <-timer.C:
			return fmt.Sprintf("still present after %s", rogueReleaseWait)
		case <-ctx.Done():
			return "still present when the fault was stopped"
		}
	}
}

// resetRounds bounds the rounds of emptying the key node: waiters whose
// nodes vanish queue again at once, so a round can find it refilled.
const resetRounds = 5

// reset empties the key node, deletes it and creates it again. Emptying
// stops at the first refusal: one is proof enough.
func (a *attack) reset(ctx context.Context) {
	keyNode := a.vic.keyNode
	deleted := 0
	var delErr error
	tried := false
	for round := 0; round < resetRounds && ctx.Err() == nil; round++ {
		n, refused := a.emptyQueue(keyNode)
		deleted += n
		if refused {
			break
		}
		delErr, tried = a.conn.Delete(keyNode, -1), true
		if !errors.Is(delErr, zk.ErrNotEmpty) {
			break
		}
	}
	if !tried {
		delErr = a.conn.Delete(keyNode, -1)
	}
	if deleted > 0 {
		a.attempts = append(a.attempts, attempt{what: "reset: delete the queue's nodes", path: keyNode + "/*",
			outcome: outcomeDone, note: fmt.Sprintf("%d nodes", deleted)})
	}
	a.try("reset: delete the key node", keyNode, func() error { return delErr })
	cr := a.try("reset: create the key node again", keyNode, func() error {
		_, err := a.conn.Create(keyNode, nil, 0, zk.WorldACL(zk.PermAll))
		return err
	})
	if cr.outcome == outcomeDone {
		if ok, st, err := a.conn.Exists(keyNode); err == nil && ok {
			cr.note = fmt.Sprintf("czxid 0x%x (was 0x%x), child version %d: the next lock node ends in %010d",
				st.Czxid, a.vic.keyCzxid, st.Cversion, st.Cversion)
		}
	}
}

// emptyQueue deletes every child of keyNode; a refusal is recorded and
// ends it.
func (a *attack) emptyQueue(keyNode string) (deleted int, refused bool) {
	children, _, err := a.conn.Children(keyNode)
	if err != nil {
		a.attempts = append(a.attempts, attempt{what: "reset: list the queue", path: keyNode, outcome: classify(err), err: err})
		return 0, true
	}
	for _, c := range children {
		err := a.conn.Delete(keyNode+"/"+c, -1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			a.attempts = append(a.attempts, attempt{what: "reset: delete a queue node", path: keyNode + "/" + c,
				outcome: classify(err), err: err, note: fmt.Sprintf("after deleting %d", deleted)})
			return deleted, true
		}
		deleted++
	}
	return deleted, false
}

// count is how many attempts had outcome o.
func (a *attack) count(o string) int {
	n := 0
	for _, at := range a.attempts {
		if at.outcome == o {
			n++
		}
	}
	return n
}

// detail is the record: a tally, then every attempt in order.
func (a *attack) detail() string {
	parts := []string{fmt.Sprintf("anonymous client, %d attempts: %d refused, %d done, %d failed, %d unknown",
		len(a.attempts), a.count(outcomeRefused), a.count(outcomeDone), a.count(outcomeFailed), a.count(outcomeUnknown))}
	for _, at := range a.attempts {
		parts = append(parts, at.String())
	}
	return strings.Join(parts, "; ")
}

// rogueEnd is the stop operation: it records what the tampering left and
// removes the nodes the rogue forged (its reset's key node is left: the
// workers queue in it by now).
type rogueEnd struct {
	addrs  []string
	vic    victim
	forged []string
	target history.Value
}

func (e rogueEnd) undo(ctx context.Context) (history.Value, error) {
	v := history.Value{PID: e.target.PID, TargetProcess: e.target.TargetProcess, Target: e.target.Target}
	ctx, cancel := context.WithTimeout(ctx, rogueBound)
	defer cancel()
	conn, closeConn, err := dialRogue(ctx, e.addrs, nil)
	if err != nil {
		if len(e.forged) == 0 {
			v.Detail = "nothing forged to remove; state not checked: " + err.Error()
			return v, nil
		}
		return v, fmt.Errorf("forged nodes %s not checked or removed: %w", strings.Join(e.forged, ", "), err)
	}
	defer closeConn()
	var notes []string
	var errs []error
	for _, n := range e.forged {
		note, err := removeForged(conn, n)
		notes = append(notes, note)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(e.forged) == 0 {
		notes = append(notes, "no forged node")
	}
	notes = append(notes, e.keyState(conn))
	v.Detail = strings.Join(notes, "; ")
	return v, errors.Join(errs...)
}

// removeForged deletes a node the rogue forged, if it is still there.
func removeForged(conn *zk.Conn, node string) (string, error) {
	ok, _, err := conn.Exists(node)
	switch {
	case err != nil:
		return "", fmt.Errorf("forged node %s: %w", node, err)
	case !ok:
		return "forged node " + node + " already gone", nil
	}
	if err := conn.Delete(node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", fmt.Errorf("forged node %s still present, cannot remove it: %w", node, err)
	}
	return "forged node " + node + " was still present: removed", nil
}

// keyState says whether the key node is the one the run started with.
func (e rogueEnd) keyState(conn *zk.Conn) string {
	ok, st, err := conn.Exists(e.vic.keyNode)
	switch {
	case err != nil:
		return "key node " + e.vic.keyNode + ": " + err.Error()
	case !ok:
		return "key node " + e.vic.keyNode + " is gone"
	case st.Czxid == e.vic.keyCzxid:
		return "key node " + e.vic.keyNode + " intact (same czxid)"
	default:
		return fmt.Sprintf("key node %s was re-created (czxid 0x%x, was 0x%x): its sequence restarted", e.vic.keyNode, st.Czxid, e.vic.keyCzxid)
	}
}
