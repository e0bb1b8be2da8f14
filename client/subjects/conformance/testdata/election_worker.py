#!/usr/bin/python3
"""An election worker for zkchaos, in Python with kazoo.

Written from docs/worker-protocol.md alone, as a third party would: it proves
that the protocol can be implemented from its documentation. It serves the
election workload only (`--workload election`); started with any other
workload it exits 2 before its hello, as the protocol allows.

    chaos run --workload election \
        --recipe "exec:/usr/bin/python3 /abs/path/election_worker.py" ...

The candidate is the seed recipe's election
(docs/background.md#leader-election) on kazoo's plain primitives: an
ephemeral sequential node under /leaders/<service>; the smallest leads;
each candidate watches its immediate predecessor; the term
is the czxid of its own node (the 10-digit sequence with --token seq); before
answering a campaign ok it confirms that its node's ephemeralOwner is its
current session. As leader it scans, claims and completes tasks in the
register's task table under its term; a complete's work is cancelled as soon
as it may no longer act as leader (polled every 5 ms), and a call whose reply
was lost is retried up to 3 times, each retry after checking it still leads.

stdout carries protocol lines only; the log goes to stderr. Credentials come
from the environment (ZKCHAOS_ZK_AUTH, ZKCHAOS_REGISTER_SECRET) and are never
logged.
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
import uuid

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState
from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

ELECTION_ROOT = "/leaders"
TASK_RETRIES = 3
WORK_POLL = 0.005
REGISTER_TIMEOUT = 5.0
WATCH_EVENTS = (EventType.CREATED, EventType.DELETED, EventType.CHANGED, EventType.CHILD)

log = logging.getLogger("pyelect")

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
    flags = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and i + 1 < len(argv):
            flags[a[2:]] = argv[i + 1]
            i += 2
        else:
            i += 1
    return flags


def hexid(sid):
    return "0x%x" % sid if sid is not None else ""


class Grant:
    """One leadership: the term, the node, the session it was won in."""

    def __init__(self, service, term, node, session):
        self.service = service
        self.term = term
        self.node = node
        self.session = session
        # active: the worker may act under it (cleared at demotion or when
        # a resign starts). reported: a demoted event was written for it.
        self.active = True
        self.reported = False


class Worker:
    def __init__(self, flags):
        self.flags = flags
        self.process = int(flags.get("process", "0"))
        self.register = flags.get("register", "")
        self.token_kind = flags.get("token", "czxid")
        self.session_timeout = go_duration(flags.get("session-timeout", "10s")) or 10.0
        self.secret = os.environ.get("ZKCHAOS_REGISTER_SECRET", "")
        self.pid = os.getpid()

        auth = os.environ.get("ZKCHAOS_ZK_AUTH", "")
        auth_data = []
        if auth:
            scheme, _, cred = auth.partition(":")
            auth_data = [(scheme, cred)]
            self.acl = CREATOR_ALL_ACL + READ_ACL_UNSAFE
        else:
            self.acl = OPEN_ACL_UNSAFE

        self.out_lock = threading.Lock()
        # mu guards the session view and the grants; the kazoo listener
        # (the connection thread) and the serving thread both take it.
        self.mu = threading.Lock()
        self.connected_cv = threading.Condition(self.mu)
        self.session = None  # current session id, None while it has none
        self.connected = False
        self.closing = False
        self.hello_sent = False
        self.early = []  # events before the hello, written after it
        self.grants = {}  # service -> Grant
        self.unknown = []  # grants whose resign was answered info
        self.dirs = set()  # service nodes known to exist

        self.zk = KazooClient(
            hosts=flags.get("zk", "127.0.0.1:2181"),
            timeout=self.session_timeout,
            auth_data=auth_data or None,
            # reconnect promptly: a long back-off would outlast a fault.
            connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 1.5, "max_delay": 1.0},
            logger=logging.getLogger("kazoo"),
        )
        self.zk.add_listener(self.on_state)

    # ---- output ----

    def say(self, msg):
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
        pw = getattr(self.zk, "_session_passwd", None)
        if not pw or pw == b"\x00" * 16:
            return None
        return base64.b64encode(pw).decode("ascii")

    def session_event(self, state, sid, with_password=False):
        m = {"event": "session", "state": state, "session": hexid(sid)}
        if with_password:
            pw = self.password()
            if pw:
                m["password"] = pw
        return m

    def demoted(self, g, state):
        return {"event": "demoted", "key": g.service, "token": g.term, "node": g.node,
                "state": state, "session": hexid(g.session)}

    # ---- session ----

    def on_state(self, state):
        """kazoo's listener, on its connection thread: must not block.

        Grants are cleared under mu before their demoted event is written,
        so no task call can pass a leadership check after the event."""
        lines = []
        with self.mu:
            if self.closing:
                return
            if state == KazooState.CONNECTED:
                sid = self.zk._session_id
                first = self.session is None and not self.hello_sent
                if self.session is not None and sid != self.session:
                    # another session without an expiry reported first
                    for g in self.live_grants():
                        g.active, g.reported = False, True
                        lines.append(self.demoted(g, "session-changed"))
                self.session, self.connected = sid, True
                if not first:
                    lines.append(self.session_event("connected", sid, with_password=True))
                self.connected_cv.notify_all()
            elif state == KazooState.SUSPENDED:
                self.connected = False
                lines.append(self.session_event("disconnected", self.session))
            elif state == KazooState.LOST:
                # kazoo's LOST outside our own close: the session expired
                # (or authentication failed; it is gone either way).
                old = self.session
                self.session, self.connected = None, False
                lines.append(self.session_event("expired", old))
                for g in self.live_grants():
                    g.active, g.reported = False, True
                    lines.append(self.demoted(g, "expired"))
                self.connected_cv.notify_all()
            # the lines are written under mu: their order is the order of
            # the state changes.
            for m in lines:
                self.say(m)

    def live_grants(self):
        """Grants not yet reported over (caller holds mu)."""
        return [g for g in list(self.grants.values()) + self.unknown if not g.reported]

    def still_leading(self, g):
        with self.mu:
            if not g.active or g.reported or not self.connected or self.session != g.session:
                return False
        # the library's own state is the freshest a client can know
        return self.zk.state == KazooState.CONNECTED and self.zk._session_id == g.session

    def leading(self):
        with self.mu:
            grants = list(self.grants.values())
        for g in grants:
            if self.still_leading(g):
                return g
        return None

    def wait_connected(self, deadline):
        """The current session id once connected, or None at the deadline."""
        with self.mu:
            while not self.connected:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.connected_cv.wait(left)
            return self.session

    def current(self):
        with self.mu:
            return self.session if self.connected else None

    def call(self, async_result, deadline):
        """Result of a kazoo async call, bounded by deadline (a request made
        while disconnected waits in kazoo's queue otherwise)."""
        left = max(deadline - time.monotonic(), 0.001)
        try:
            return async_result.get(timeout=left)
        except KazooTimeoutError:
            raise ConnectionLoss("no reply by the deadline")

    # ---- campaign ----

    def ensure_path(self, path, deadline):
        parts = [p for p in path.split("/") if p]
        cur = ""
        for p in parts:
            cur += "/" + p
            try:
                self.call(self.zk.create_async(cur, b"", acl=self.acl), deadline)
            except NodeExistsError:
                pass

    @staticmethod
    def seq(name):
        return int(name[-10:])

    def campaign(self, req):
        service = req["key"]
        timeout = req.get("timeout_ms", 0) / 1000.0
        if timeout <= 0:
            return {"type": "fail", "error": "campaign: timeout_ms must be positive"}
        # deadline bounds the wait; a call may run a little past it (the
        # last look at the queue, the token's read), within the answer's
        # slack of 1 s.
        deadline = time.monotonic() + timeout
        calls = deadline + 0.5
        with self.mu:
            g = self.grants.get(service)
            if g is not None and not g.reported:
                return {"type": "fail", "error": "campaign: already leading " + service}
        wakeups = 0
        d = ELECTION_ROOT + "/" + service
        prefix = "_c_" + uuid.uuid4().hex + "-n_"
        node = None  # our node's path
        node_session = None  # the session it was created in
        while True:
            sid = self.wait_connected(deadline)
            if sid is None:
                break
            try:
                if d not in self.dirs:
                    self.ensure_path(d, calls)
                    self.dirs.add(d)
                if node is not None and node_session != sid:
                    node = None  # the session ended, and its node with it
                if node is None:
                    try:
                        node = self.call(self.zk.create_async(d + "/" + prefix, b"p%d" % self.process, acl=self.acl,
                                                              ephemeral=True, sequence=True), calls)
                        node_session = sid
                    except (ConnectionLoss, SessionExpiredError):
                        node = self.find_own(d, prefix, calls)
                        if node is None:
                            continue
                        node_session = sid
                kids = [k for k in self.call(self.zk.get_children_async(d), calls) if re.search(r"\d{10}$", k)]
                kids.sort(key=self.seq)
                name = node.rsplit("/", 1)[1]
                if name not in kids:
                    node = None  # gone (its session expired): run again
                    continue
                i = kids.index(name)
                if i == 0:
                    st = self.call(self.zk.exists_async(node), calls)
                    cur = self.current()
                    if st is None or cur is None or st.ephemeralOwner != cur:
                        log.warning("own node %s not owned by the current session", node)
                        node = None
                        continue
                    term = st.czxid if self.token_kind != "seq" else self.seq(name)
                    with self.mu:
                        self.grants[service] = Grant(service, term, node, cur)
                    return {"type": "ok", "token": term, "node": node, "wakeups": wakeups}
                if time.monotonic() >= deadline:
                    break  # the last look is taken: no more waiting
                fired = threading.Event()
                kind = []

                def watch(ev, fired=fired, kind=kind):
                    kind.append(ev.type)
                    fired.set()

                if self.call(self.zk.exists_async(d + "/" + kids[i - 1], watch=watch), calls) is None:
                    continue  # already gone: no wake-up
                fired.wait(max(deadline - time.monotonic(), 0))
                if fired.is_set() and kind and kind[0] in WATCH_EVENTS:
                    wakeups += 1
            except (ConnectionLoss, SessionExpiredError) as e:
                log.info("campaign %s: %s", service, e)
                time.sleep(0.01)
                if time.monotonic() >= deadline:
                    break
            except ZookeeperError as e:
                return self.give_up(node, node_session, "campaign: %s %s" % (type(e).__name__, e), wakeups)
        return self.give_up(node, node_session, "timeout", wakeups)

    def find_own(self, d, prefix, deadline):
        """After a create whose reply was lost: our node, if it was made."""
        sid = self.wait_connected(deadline)
        if sid is None:
            raise ConnectionLoss("not connected")
        for k in self.call(self.zk.get_children_async(d), deadline):
            if k.startswith(prefix):
                st = self.call(self.zk.exists_async(d + "/" + k), deadline)
                if st is not None and st.ephemeralOwner == sid:
                    return d + "/" + k
        return None

    def give_up(self, node, node_session, error, wakeups):
        """A campaign that does not win removes its node: fail when it is
        surely gone, info when that cannot be known in bounded time."""
        if node is None:
            return {"type": "fail", "error": error, "wakeups": wakeups}
        bound = time.monotonic() + 0.5
        while True:
            sid = self.wait_connected(bound)
            if sid is None:
                return {"type": "info", "error": error + "; its node %s could not be removed in time" % node,
                        "wakeups": wakeups}
            if sid != node_session:
                return {"type": "fail", "error": error, "wakeups": wakeups}  # the session took it
            try:
                self.call(self.zk.delete_async(node), bound)
                return {"type": "fail", "error": error, "wakeups": wakeups}
            except NoNodeError:
                return {"type": "fail", "error": error, "wakeups": wakeups}
            except (ConnectionLoss, SessionExpiredError):
                continue

    # ---- resign ----

    def resign(self, req):
        service = req["key"]
        with self.mu:
            g = self.grants.pop(service, None)
            if g is None:
                return {"type": "fail", "error": "not held"}
            reported = g.reported
            g.active = False
            if not reported:
                self.unknown.append(g)  # reported lost should it end now
        base = {"node": g.node, "token": g.term}
        if reported:
            # its session ended before this resign: the node was gone
            return dict(base, type="fail", error="revoked")
        deadline = time.monotonic() + max(2 * self.session_timeout, 5.0)
        sent = False  # a delete went out whose reply was lost
        while True:
            sid = self.wait_connected(deadline)
            if sid is None:
                return dict(base, type="info", error="resign: no connection in time; outcome unknown")
            if sid != g.session:
                with self.mu:
                    if not g.reported:
                        g.reported = True
                        self.say(self.demoted(g, "session-changed"))
                    if g in self.unknown:
                        self.unknown.remove(g)
                if sent:
                    return dict(base, type="info", error="resign: the session ended after the delete was sent; outcome unknown")
                return dict(base, type="fail", error="revoked")
            try:
                self.call(self.zk.delete_async(g.node), deadline)
                self.forget(g)
                return dict(base, type="ok")
            except NoNodeError:
                self.forget(g)
                if sent:
                    return dict(base, type="ok")  # the earlier delete was applied
                return dict(base, type="fail", error="revoked")
            except (ConnectionLoss, SessionExpiredError):
                sent = True
                continue

    def forget(self, g):
        with self.mu:
            if g in self.unknown:
                self.unknown.remove(g)

    # ---- the register ----

    def post(self, path, body):
        """(status, reply dict) or raises OSError-like on transport errors."""
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

    def task_call(self, req):
        g = self.leading()
        if g is None:
            return {"type": "fail", "error": "not leading"}
        f = req["f"]
        if f == "complete":
            work = req.get("work_ms", 0) / 1000.0
            end = time.monotonic() + work
            while True:
                if not self.still_leading(g):
                    return {"type": "fail", "token": g.term,
                            "error": "complete: leadership lost during the work: task cancelled, nothing sent"}
                left = end - time.monotonic()
                if left <= 0:
                    break
                time.sleep(min(left, WORK_POLL))
        body = {"service": g.service, "task": req["key"], "term": g.term, "process": self.process, "pid": self.pid}
        if f == "complete":
            body["result"] = "r-%d-%s" % (g.term, req["key"])
        m = {"type": "info", "token": g.term, "error": "no call made"}
        for attempt in range(TASK_RETRIES + 1):
            if not self.still_leading(g):
                if attempt == 0:
                    return {"type": "fail", "token": g.term, "error": "not leading"}
                log.warning("%s %s: reply lost and leadership gone: not retrying", f, req["key"])
                break
            try:
                status, rep, text = self.post("/task/" + f, body)
            except (OSError, http.client.HTTPException, ValueError) as e:
                m = {"type": "info", "token": g.term, "error": "%s: outcome unknown: %s" % (f, e)}
                log.warning("%s %s: reply lost (try %d): %s", f, req["key"], attempt + 1, e)
                continue
            if rep is None:
                kind = "fail" if 400 <= status < 500 else "info"
                m = {"type": kind, "token": g.term, "error": "%s: register answered %d: %s" % (f, status, text)}
                if kind == "fail":
                    break
                continue
            m = {"token": g.term, "current_token": rep.get("term"), "accepted": bool(rep.get("accepted")),
                 "state": rep.get("state", "")}
            if rep.get("result"):
                m["digest"] = rep["result"]
            if rep.get("accepted") or rep.get("reason") == "done":
                m["type"] = "ok"
            else:
                m["type"], m["error"] = "fail", "rejected: " + rep.get("reason", "")
            break
        return m

    def scan(self, req):
        g = self.leading()
        if g is None:
            return {"type": "fail", "error": "not leading"}
        try:
            status, rep, text = self.post("/task/scan", {"service": g.service})
        except (OSError, http.client.HTTPException, ValueError) as e:
            return {"type": "info", "error": "scan: %s" % e}
        if rep is None:
            return {"type": "fail" if 400 <= status < 500 else "info", "error": "scan: register answered %d: %s" % (status, text)}
        pending = sum(1 for t in (rep.get("tasks") or {}).values() if t.get("state") != "SUCCEEDED")
        return {"type": "ok", "token": g.term, "value": pending, "current_token": rep.get("term")}

    # ---- the loop ----

    def handle(self, line):
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError as e:
            rid = 0
            m = re.search(r'"id"\s*:\s*(\d+)', line)
            if m:
                rid = int(m.group(1))
            self.say({"id": rid, "type": "fail", "error": "malformed request: %s" % e})
            return
        rid = req.get("id", 0)
        f = req.get("f")
        serve = {"campaign": self.campaign, "resign": self.resign, "claim": self.task_call,
                 "complete": self.task_call, "scan": self.scan}.get(f)
        if serve is None:
            self.say({"id": rid, "type": "fail", "error": "unknown f %r" % f})
            return
        if not req.get("key"):
            self.say({"id": rid, "type": "fail", "error": "%s: missing key" % f})
            return
        try:
            m = serve(req)
        except Exception as e:  # never die of a request
            log.exception("serving %s", f)
            m = {"type": "info", "error": "%s: %s: %s" % (f, type(e).__name__, e)}
        m["id"], m["key"] = rid, req["key"]
        self.say(m)

    def run(self):
        self.zk.start(timeout=20)
        # start() returns once kazoo is connected, which it marks before
        # it tells its listeners: on a loaded machine on_state may not yet
        # have taken the session id, and a hello needs it.
        sid = self.wait_connected(time.monotonic() + 20)
        if sid is None:
            raise SystemExit("no ZooKeeper session within 20 s of connecting")
        hello = {"event": "hello", "pid": self.pid, "session": hexid(sid), "workload": "election"}
        pw = self.password()
        if pw:
            hello["password"] = pw
        self.say(hello)
        for line in sys.stdin:
            if line.strip():
                self.handle(line)
        self.shutdown()

    def shutdown(self):
        with self.mu:
            self.closing = True
            sid = self.session
            ended = self.live_grants()
            for g in ended:
                g.active, g.reported = False, True
        try:
            self.zk.stop()  # one closeSession: every node of ours goes
            self.zk.close()
        except Exception as e:
            log.warning("closing the session: %s", e)
        if sid is not None:
            self.say({"event": "session", "state": "closed", "session": hexid(sid)})
        for g in ended:
            self.say(self.demoted(g, "closed"))


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    flags = parse_flags(sys.argv[1:])
    workload = flags.get("workload", "lock")
    if workload != "election":
        print("election_worker.py serves the election workload only, not %r" % workload, file=sys.stderr)
        return 2
    Worker(flags).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
