"""kazoo's Lock recipe as a zkchaos worker (the `kazoo` subject).

The worker protocol of docs/worker-protocol.md (requests on stdin, answers
and events on stdout, one JSON object per line, the log on stderr), with
kazoo used as its documentation says: one KazooClient (one session), a
`client.Lock(path)` per lock acquired with a timeout, and a state listener
that treats SUSPENDED as "stop protected work" and LOST as "the lock is
gone" (kazoo.recipe.lock's own advice). Lock workload only: started with
another --workload it exits 2 before its hello, as the protocol allows.

Started as `/usr/bin/python3 kazoo_worker.py <protocol flags>`, so the PID
the controller gets (and the nemesis stops) is the client itself.

What kazoo's Lock does not offer is added around it, each where the
protocol needs an exact answer:

  - a bounded acquire: Lock.acquire(timeout=t) waits up to t on *each*
    watch and its sync calls wait for a lost connection as long as it
    takes. The acquire runs on a thread of its own; a timer calls the
    recipe's own Lock.cancel() at the deadline (no wait starts after it;
    a look at the queue already under way may still grant), and the
    request thread answers by deadline + 0.5 s at the latest. A grant
    kazoo reports after the answer (info) is given back at once.
  - the node after a failed acquire: kazoo's cleanup swallows errors, so
    the worker lists the key's queue for the Lock's unique prefix and
    deletes what is left: `fail` only when that is known gone, else
    `info`.
  - release: Lock.release() retries and ignores NoNode, so it cannot tell
    "released" from "revoked" from "unknown". The worker deletes its node
    with single plain calls and judges the outcome as the protocol's
    table says; the Lock object, one per acquire, is dropped after.
  - wake-ups: the Lock waits on its bound method _watch_predecessor; the
    worker sets an instance attribute of that name that counts a watch
    notification (not a session event) while its acquire is in progress,
    then wakes the Lock as the original does.

Credentials come from the environment (ZKCHAOS_ZK_AUTH as kazoo's
auth_data, with CREATOR_ALL + READ for the world as the default ACL of every
node created; ZKCHAOS_REGISTER_SECRET as the register's bearer token) and
are never logged.
"""

import base64
import http.client
import json
import logging
import os
import re
import sys
import threading
import time
import urllib.parse

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState
from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

PROTOCOL = 6  # the version of docs/worker-protocol.md spoken ("Versions"), sent in the hello
REGISTER_TIMEOUT = 5.0  # as chaos worker's registerTimeout
ANSWER_SLACK = 0.5  # an acquire is answered by its deadline plus this
WATCH_EVENTS = (EventType.CREATED, EventType.DELETED, EventType.CHANGED, EventType.CHILD)

log = logging.getLogger("kazoo-worker")

_DURATION = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|\u00b5s|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(s):
    """Seconds of a Go duration string (`3s`, `1.5s`, `500ms`, `1m0s`)."""
    if s in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s):
        raise ValueError("not a Go duration: %r" % s)
    return total


def parse_flags(argv):
    """The controller's `--name value` pairs; unknown ones are ignored."""
    flags, i = {}, 0
    while i < len(argv):
        if argv[i].startswith("--") and i + 1 < len(argv):
            flags[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            i += 1
    return flags


def hexid(sid):
    return "0x%x" % sid if sid is not None else ""


class Grant:
    """One lock held: the key, its token and node, the session it is in.
    lost is set (under the worker's mu) once it is reported lost."""

    def __init__(self, key, token, node, session):
        self.key, self.token, self.node, self.session = key, token, node, session
        self.lost = False


class Attempt:
    """One Lock.acquire on its own thread, and what became of it."""

    def __init__(self, lock):
        self.lock = lock
        self.mu = threading.Lock()
        self.finished = threading.Event()
        self.got = False
        self.error = None
        self.counting = True  # wake-ups count until the answer is decided
        self.wakeups = 0
        self.abandoned = False  # answered before kazoo returned


class Worker:
    def __init__(self, flags):
        self.process = int(flags.get("process", "0"))
        self.register = flags.get("register", "")
        self.root = flags.get("root", "/locks").rstrip("/")
        self.token_kind = flags.get("token", "czxid")
        self.session_timeout = go_duration(flags.get("session-timeout", "10s")) or 10.0
        # a bound for calls that wait for a lost connection (as chaos worker)
        self.zk_timeout = max(2 * self.session_timeout, 5.0)
        self.secret = os.environ.get("ZKCHAOS_REGISTER_SECRET", "")
        self.pid = os.getpid()

        auth = os.environ.get("ZKCHAOS_ZK_AUTH", "")
        auth_data, acl = None, OPEN_ACL_UNSAFE
        if auth:
            scheme, _, cred = auth.partition(":")
            auth_data, acl = [(scheme, cred)], CREATOR_ALL_ACL + READ_ACL_UNSAFE

        self.out_lock = threading.Lock()
        # mu guards the session view and the grants: kazoo's listener (on
        # its connection thread) and the request thread both take it, and
        # a line whose order matters is written while holding it.
        self.mu = threading.Lock()
        self.connected_cv = threading.Condition(self.mu)
        self.session = None  # the current session id, None without one
        self.connected = False
        self.closing = False
        self.hello_sent = False
        self.early = []  # events before the hello, written after it
        self.grants = {}  # key -> Grant
        self.unsure = []  # grants being released, or whose release was info

        self.zk = KazooClient(
            hosts=flags.get("zk", "127.0.0.1:2181"),
            timeout=self.session_timeout,
            auth_data=auth_data,
            default_acl=acl,  # every node kazoo creates: lock nodes, missing parents
            # reconnect promptly: a long back-off would outlast a fault.
            connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 1.5, "max_delay": 1.0},
            logger=logging.getLogger("kazoo"),
        )
        self.zk.add_listener(self.on_state)

    # ---- output ----

    def say(self, msg):
        """Write one protocol line and flush; events before the hello wait
        for it (the hello must be the first line)."""
        line = json.dumps(msg, separators=(",", ":"))
        with self.out_lock:
            if not self.hello_sent and msg.get("event") != "hello":
                self.early.append(line)
                return
            sys.stdout.write(line + "\n")
            if msg.get("event") == "hello":
                self.hello_sent = True
                for e in self.early:
                    sys.stdout.write(e + "\n")
                self.early = []
            sys.stdout.flush()

    def password(self):
        """The session password, base64, so expire-holder can end the
        session from outside; None before a session."""
        pw = getattr(self.zk, "_session_passwd", None)
        if not pw or pw == b"\x00" * 16:
            return None
        return base64.b64encode(pw).decode("ascii")

    def session_event(self, state, sid, with_password=False):
        m = {"event": "session", "state": state, "session": hexid(sid)}
        pw = self.password() if with_password else None
        if pw:
            m["password"] = pw
        return m

    @staticmethod
    def lost_event(g, state):
        return {"event": "lost", "key": g.key, "token": g.token, "node": g.node, "state": state,
                "session": hexid(g.session)}

    # ---- session ----

    def on_state(self, state):
        """kazoo's state listener, on its connection thread (it must not
        block or call kazoo). A session event and the lost events it causes
        are written under mu, together and in that order."""
        with self.mu:
            if self.closing:
                return
            lines = []
            if state == KazooState.CONNECTED:
                sid = self.zk.client_id[0] if self.zk.client_id else None
                first = self.session is None and not self.hello_sent
                if not first:
                    lines.append(self.session_event("connected", sid, with_password=True))
                if self.session is not None and sid != self.session:
                    # another session without an expiry reported first
                    lines += [self.lost_event(g, "session-changed") for g in self.lose()]
                self.session, self.connected = sid, True
            elif state == KazooState.SUSPENDED:
                self.connected = False
                lines.append(self.session_event("disconnected", self.session))
            elif state == KazooState.LOST:
                # LOST outside our own close: the server expired the session
                # (or refused its credentials); it is gone either way.
                old, self.session, self.connected = self.session, None, False
                lines.append(self.session_event("expired", old))
                lines += [self.lost_event(g, "expired") for g in self.lose()]
            self.connected_cv.notify_all()
            for m in lines:
                self.say(m)

    def lose(self):
        """Marks every grant held or unsure as lost and returns them; the
        unsure ones are settled by it (caller holds mu)."""
        out = [g for g in list(self.grants.values()) + self.unsure if not g.lost]
        for g in out:
            g.lost = True
        self.unsure = []
        return out

    def wait_connected(self, deadline):
        """The current session id once connected, or None at the deadline."""
        with self.mu:
            while not self.connected:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.connected_cv.wait(left)
            return self.session

    def call(self, async_result, deadline):
        """The result of a kazoo async call, by the deadline (a request made
        while disconnected waits in kazoo's queue otherwise). Past the
        deadline the request may still be sent: ConnectionLoss, unknown."""
        try:
            return async_result.get(timeout=max(deadline - time.monotonic(), 0.001))
        except KazooTimeoutError:
            raise ConnectionLoss("no reply by the deadline")

    # ---- acquire ----

    def acquire(self, rid, key, timeout_ms):
        """Answers (writes) the acquire itself: an ok is written under mu
        with the grant's registration, so no lost event of the grant can
        come before it."""
        if not isinstance(timeout_ms, (int, float)) or timeout_ms <= 0:
            return {"type": "fail", "error": "acquire: timeout_ms must be positive"}
        t0 = time.monotonic()
        deadline = t0 + timeout_ms / 1000.0
        with self.mu:
            g = self.grants.get(key)
            if g is not None and not g.lost:
                return {"type": "fail", "error": "already holding " + key}
            self.grants.pop(key, None)  # a grant reported lost is over
        a = Attempt(self.zk.Lock(self.root + "/" + key, "p%d" % self.process))
        a.lock._watch_predecessor = self.counter(a)
        threading.Thread(target=self.run_attempt, args=(a, deadline - t0), daemon=True).start()
        timer = threading.Timer(timeout_ms / 1000.0, a.lock.cancel)
        timer.daemon = True
        timer.start()
        try:
            a.finished.wait(max(deadline + ANSWER_SLACK - time.monotonic(), 0))
            with a.mu:
                a.counting = False
                if not a.finished.is_set():
                    a.abandoned = True  # run_attempt gives a late grant back
                    return {"type": "info", "wakeups": a.wakeups,
                            "error": "kazoo's Lock.acquire did not return by the deadline (no connection?): outcome unknown"}
            if a.got:
                return self.granted(rid, key, a, deadline + ANSWER_SLACK)
            why = "timeout" if a.error is None or type(a.error).__name__ in ("LockTimeout", "CancelledError") else \
                "acquire: %s: %s" % (type(a.error).__name__, a.error)
            return self.clean(a, why, deadline + ANSWER_SLACK)
        finally:
            timer.cancel()

    def counter(self, a):
        """The Lock's predecessor watch, counting this acquire's wake-ups."""

        def watch(event):
            with a.mu:
                if a.counting and event.type in WATCH_EVENTS:
                    a.wakeups += 1
            a.lock.wake_event.set()  # what Lock._watch_predecessor does

        return watch

    def run_attempt(self, a, timeout):
        try:
            a.got = bool(a.lock.acquire(blocking=True, timeout=timeout))
        except Exception as e:  # LockTimeout, CancelledError, KazooException
            a.error = e
        with a.mu:
            a.finished.set()
            late = a.abandoned
        if late:
            # answered info: whatever kazoo made is given back, not held
            log.warning("acquire of %s returned after its answer (got %s): giving its node back", a.lock.path, a.got)
            self.remove_nodes(a, time.monotonic() + self.zk_timeout)

    def granted(self, rid, key, a, deadline):
        """kazoo says the lock is ours: read the node's Stat for the token
        and check the node belongs to the current session, then register
        the grant and answer ok under mu."""
        node = a.lock.path + "/" + a.lock.node
        try:
            st = self.call(self.zk.exists_async(node), deadline)
        except Exception as e:
            return self.clean(a, "acquire: token of %s: %s" % (node, e), deadline)
        with self.mu:
            sid = self.session
            if st is not None and self.connected and st.ephemeralOwner == sid:
                tok = int(a.lock.node[-10:]) if self.token_kind == "seq" else st.czxid
                self.grants[key] = Grant(key, tok, node, sid)
                log.info("acquired %s node %s token %d", key, node, tok)
                self.say({"id": rid, "type": "ok", "key": key, "token": tok, "node": node, "wakeups": a.wakeups})
                return None
        # the session ended between kazoo's grant and this look
        return self.clean(a, "acquire: the session was lost before the grant could be answered", deadline)

    def clean(self, a, why, deadline):
        """A not-granted acquire: fail when its node is known gone, info
        when that cannot be known in bounded time."""
        if self.remove_nodes(a, max(deadline, time.monotonic() + 0.2)):
            return {"type": "fail", "error": why, "wakeups": a.wakeups}
        return {"type": "info", "wakeups": a.wakeups,
                "error": why + "; its queue node could not be confirmed gone in time"}

    def remove_nodes(self, a, deadline):
        """Deletes every node of the Lock's unique prefix in the key's queue
        (a create whose reply was lost may have made one kazoo does not
        know); True once the queue shows none of ours."""
        while True:
            if self.wait_connected(deadline) is None:
                return False
            try:
                kids = self.call(self.zk.get_children_async(a.lock.path), deadline)
                ours = [k for k in kids if k.startswith(a.lock.prefix)]
                for k in ours:
                    try:
                        self.call(self.zk.delete_async(a.lock.path + "/" + k), deadline)
                    except NoNodeError:
                        pass
                if not ours:
                    return True
            except NoNodeError:
                return True  # no queue at all
            except (ConnectionLoss, SessionExpiredError) as e:
                log.info("removing the nodes of %s: %s", a.lock.prefix, e)
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.02)
            except Exception as e:
                log.warning("removing the nodes of %s: %s", a.lock.prefix, e)
                return False

    # ---- protected work and the register ----

    def held(self, key):
        """The grant of key if the worker may act under it now: held, not
        lost nor being released, the session connected and the grant's."""
        with self.mu:
            g = self.grants.get(key)
            if g is None or g.lost or not self.connected or self.session != g.session:
                return None
        if self.zk.state != KazooState.CONNECTED:
            return None
        return g

    def read(self, key):
        g = self.held(key)
        if g is None:
            return {"type": "fail", "error": "not holding " + key}
        return self.register_call("/read", {"key": key, "token": g.token, "process": self.process, "pid": self.pid},
                                  g.token, None)

    def write(self, key, value, work_ms):
        if not isinstance(value, int) or isinstance(value, bool):
            return {"type": "fail", "error": "write: missing value"}
        g = self.held(key)
        if g is None:
            return {"type": "fail", "error": "not holding " + key}
        if isinstance(work_ms, (int, float)) and work_ms > 0:
            time.sleep(work_ms / 1000.0)
        # No second check: what a real holder does after its work.
        return self.register_call("/write", {"key": key, "value": value, "token": g.token, "process": self.process,
                                             "pid": self.pid}, g.token, value)

    def post(self, path, body):
        """(status, parsed reply or None, text). Transport errors raise."""
        u = urllib.parse.urlsplit(self.register)
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=REGISTER_TIMEOUT)
        try:
            conn.request("POST", path, body=json.dumps(body),
                         headers={"Content-Type": "application/json", "Authorization": "Bearer " + self.secret,
                                  "Connection": "close"})
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if resp.status != 200:
            return resp.status, None, data.decode("utf-8", "replace").strip()[:200]
        return 200, json.loads(data), ""

    def register_call(self, path, body, token, written):
        """One register call, answered as the protocol's table says: a
        reply is ok or fail (accepted:false), a 4xx is fail, anything else
        info."""
        base = {"token": token}
        if written is not None:
            base["value"] = written
        try:
            status, rep, text = self.post(path, body)
        except (OSError, http.client.HTTPException, ValueError) as e:
            return dict(base, type="info", error="register %s: outcome unknown: %s" % (path, e))
        if rep is None:
            kind = "fail" if 400 <= status < 500 else "info"
            return dict(base, type=kind, error="register %s: HTTP %d: %s" % (path, status, text))
        if rep.get("accepted"):
            if written is not None:
                return dict(base, type="ok", accepted=True)
            # a read reports which write it observed: the reply's token
            return dict(base, type="ok", accepted=True, value=rep.get("value"), current_token=rep.get("token"))
        reason = rep.get("reason") or ""
        return dict(base, type="fail", accepted=False, current_token=rep.get("fence"),
                    error="rejected: " + reason if reason else "rejected")

    # ---- release ----

    def release(self, key):
        with self.mu:
            g = self.grants.pop(key, None)
            if g is None:
                return {"type": "fail", "error": "not held"}
            if g.lost:
                # its session ended before this release: the node was gone
                return {"type": "fail", "node": g.node, "token": g.token, "error": "revoked"}
            self.unsure.append(g)  # an expiry until the outcome is known is its loss
        outcome = self.delete_own(g)
        base = {"node": g.node, "token": g.token}
        if outcome in ("ok", "revoked"):
            with self.mu:
                if g in self.unsure:
                    self.unsure.remove(g)
        if outcome == "ok":
            log.info("released %s node %s", key, g.node)
            return dict(base, type="ok")
        if outcome == "revoked":
            return dict(base, type="fail", error="revoked")
        return dict(base, type="info", error="release: outcome unknown: " + outcome)

    def delete_own(self, g):
        """Deletes the grant's node with single plain calls (no retry that
        could hide a lost reply): "ok", "revoked", or why it is unknown. A
        NoNode is revoked unless an earlier delete may have been applied;
        then it is ours if the session is the same, unknown if it ended."""
        deadline = time.monotonic() + self.zk_timeout
        sent = False
        while True:
            sid = self.wait_connected(deadline)
            with self.mu:
                ended = g.lost or (sid is not None and sid != g.session)
            if ended:
                if sent:
                    return ("the connection was lost after the delete of %s was sent and the session then ended: "
                            "the node is gone, but whether this release deleted it is unknown" % g.node)
                return "revoked"
            if sid is None:
                return "delete of %s not confirmed in time (sent before: %s)" % (g.node, sent)
            try:
                self.call(self.zk.delete_async(g.node), deadline)
                return "ok"
            except NoNodeError:
                with self.mu:
                    if not sent:
                        return "revoked"
                    if not g.lost and self.session == g.session:
                        return "ok"  # an earlier delete of ours was applied
                continue  # the session ended: the next turn says so
            except SessionExpiredError:
                time.sleep(0.02)  # refused, not applied: the listener reports the expiry
            except ConnectionLoss:
                sent = True  # it may have reached the server
                time.sleep(0.02)
            except Exception as e:
                return "delete of %s: %s: %s" % (g.node, type(e).__name__, e)

    # ---- the loop ----

    def handle(self, line):
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError as e:
            m = re.search(r'"id"\s*:\s*(\d+)', line)
            self.say({"id": int(m.group(1)) if m else 0, "type": "fail", "error": "malformed request: %s" % e})
            return
        rid, f, key = req.get("id", 0), req.get("f"), req.get("key")
        if f not in ("acquire", "read", "write", "release"):
            self.say({"id": rid, "type": "fail", "error": "unknown f %r (this worker serves the lock workload)" % f})
            return
        if not isinstance(key, str) or not key or "/" in key:
            self.say({"id": rid, "type": "fail", "error": "%s: missing or bad key" % f})
            return
        try:
            if f == "acquire":
                m = self.acquire(rid, key, req.get("timeout_ms"))
            elif f == "read":
                m = self.read(key)
            elif f == "write":
                m = self.write(key, req.get("value"), req.get("work_ms"))
            else:
                m = self.release(key)
        except Exception as e:  # never die of a request
            log.exception("serving %s", f)
            m = {"type": "info", "error": "%s: %s: %s" % (f, type(e).__name__, e)}
        if m is None:
            return  # answered already
        m["id"], m["key"] = rid, key
        with self.mu:
            self.say(m)

    def run(self):
        self.zk.start(timeout=20)
        # start() returns once kazoo is connected, which it marks before
        # it tells its listeners: on a loaded machine on_state may not yet
        # have taken the session id, and a hello needs it.
        sid = self.wait_connected(time.monotonic() + 20)
        if sid is None:
            raise SystemExit("no ZooKeeper session within 20 s of connecting")
        hello = {"event": "hello", "pid": self.pid, "session": hexid(sid), "protocol": PROTOCOL}
        pw = self.password()
        if pw:
            hello["password"] = pw
        self.say(hello)
        for line in sys.stdin:
            if line.strip():
                self.handle(line)
        self.shutdown()

    def shutdown(self):
        """One closeSession deletes every node of ours; the close and the
        grants it ended are reported after it, the session first."""
        with self.mu:
            self.closing = True
            sid = self.session
            ended = self.lose()
        try:
            self.zk.stop()
            self.zk.close()
        except Exception as e:
            log.warning("closing the session: %s", e)
        if sid is not None:
            self.say({"event": "session", "state": "closed", "session": hexid(sid)})
        for g in ended:
            self.say(self.lost_event(g, "closed"))


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    flags = parse_flags(sys.argv[1:])
    workload = flags.get("workload", "lock")
    if workload != "lock":
        print("kazoo worker: serves the lock workload only, not %r" % workload, file=sys.stderr)
        return 2
    Worker(flags).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
