#!/usr/bin/python3
"""A config client for zkchaos, in Python with kazoo.

Written from docs/worker-protocol.md alone ("Config"), as a team would
write the worker around its own config client for `chaos gate --workload
config`. It serves the config workload only: started with another
workload it exits 2 before its hello, as the protocol allows.

    chaos gate --workload config --recipe "exec:/usr/bin/python3 /abs/config_worker.py"

An admin reads /config/<key> and updates it by compare-and-set on the
version read. A watcher reads with a watch, applies the version read, and
on every notification reads data and Stat again with a new watch,
applying only what is newer; after a session expiry it reads with a
watch again once the new session is up.

`--bug stale-apply` (given after the command, before the controller's
flags) makes it the client of a classic mistake: on a notification it
re-arms with exists (Stat only) and applies the new version with the data
read when the watch was set.

stdout carries protocol lines only; the log goes to stderr. Credentials come
from the environment (ZKCHAOS_ZK_AUTH) and are never logged.
"""

import base64
import hashlib
import json
import logging
import os
import re
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, ConnectionLoss, NoAuthError, NoNodeError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState

CONFIG_ROOT = "/config"

log = logging.getLogger("pyconfig")

_DURATION = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|\u00b5s|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(s):
    """Seconds of a Go duration string (`3s`, `1.5s`, `500ms`, `1m0s`)."""
    total, pos = 0.0, 0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ValueError("not a Go duration: %r" % s)
    return total


def parse_flags(argv):
    """`--name value` pairs; unknown ones are kept and ignored."""
    flags, i = {}, 0
    while i < len(argv):
        if argv[i].startswith("--") and i + 1 < len(argv):
            flags[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            i += 1
    return flags


def digest(data):
    return hashlib.sha256(data).hexdigest()[:16]


def value_of(data):
    m = re.fullmatch(rb"n=(-?[0-9]+)\n", data)
    return int(m.group(1)) if m else None


def version_fields(data, stat):
    m = {"version": stat.version, "digest": digest(data)}
    v = value_of(data)
    if v is not None:
        m["value"] = v
    return m


class Worker:
    def __init__(self, flags):
        self.stale_apply = flags.get("bug") == "stale-apply"
        self.session_timeout = go_duration(flags.get("session-timeout", "10s"))
        # every request is bounded, as the protocol's reference worker
        # bounds them: twice the session timeout, at least 5 s.
        self.bound = max(2 * self.session_timeout, 5.0)
        auth = os.environ.get("ZKCHAOS_ZK_AUTH", "")
        auth_data = None
        if auth:
            scheme, _, cred = auth.partition(":")
            auth_data = [(scheme, cred)]
        self.out = threading.Lock()
        # mu orders what a watcher applies and reports: the watch answer
        # before any applied event, one re-read applied at a time.
        self.mu = threading.Lock()
        self.applied = {}  # key -> (version, data) applied
        self.session = None
        self.closing = False
        self.zk = KazooClient(hosts=flags.get("zk", "127.0.0.1:2181"), timeout=self.session_timeout,
                              auth_data=auth_data,
                              connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 1.5, "max_delay": 1.0},
                              logger=logging.getLogger("kazoo"))
        self.zk.add_listener(self.on_state)

    def say(self, msg):
        with self.out:
            sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
            sys.stdout.flush()

    def password(self):
        pw = getattr(self.zk, "_session_passwd", None)
        if not pw or pw == b"\x00" * 16:
            return None
        return base64.b64encode(pw).decode("ascii")

    def on_state(self, state):
        """kazoo's listener, on its connection thread: must not block."""
        if self.closing:
            return
        if state == KazooState.CONNECTED:
            sid = self.zk._session_id
            if self.session is None or sid == self.session:
                if self.session is not None:
                    self.say({"event": "session", "state": "connected", "session": "0x%x" % sid})
                self.session = sid
                return
            self.session = sid
            m = {"event": "session", "state": "connected", "session": "0x%x" % sid}
            pw = self.password()
            if pw:
                m["password"] = pw
            self.say(m)
            # A new session: every watch went with the old one, and an
            # update made meanwhile notified nobody. Read again.
            for key in list(self.applied):
                threading.Thread(target=self.refresh, args=(key, True), daemon=True).start()
        elif state == KazooState.SUSPENDED:
            self.say({"event": "session", "state": "disconnected", "session": "0x%x" % (self.session or 0)})
        elif state == KazooState.LOST:
            self.say({"event": "session", "state": "expired", "session": "0x%x" % (self.session or 0)})
            self.session = -1  # the next CONNECTED is another session

    def call(self, async_result):
        try:
            return async_result.get(timeout=self.bound)
        except KazooTimeoutError:
            raise ConnectionLoss("no reply in %.1f s" % self.bound)

    def path(self, key):
        return CONFIG_ROOT + "/" + key

    # ---- admin ----

    def read_config(self, req):
        try:
            data, stat = self.call(self.zk.get_async(self.path(req["key"])))
        except Exception as e:  # a read changes nothing: never info
            return {"type": "fail", "error": "read-config: %s %s" % (type(e).__name__, e)}
        return dict(version_fields(data, stat), type="ok")

    def update(self, req):
        data = b"n=%d\n" % int(req["value"])
        try:
            stat = self.call(self.zk.set_async(self.path(req["key"]), data, version=int(req["expected_version"])))
        except BadVersionError:
            return {"type": "fail", "value": req["value"],
                    "error": "bad version: setData %s with version %d" % (self.path(req["key"]), req["expected_version"])}
        except (NoNodeError, NoAuthError) as e:
            return {"type": "fail", "value": req["value"], "error": "update: %s" % type(e).__name__}
        except (ConnectionLoss, SessionExpiredError) as e:
            return {"type": "info", "value": req["value"], "error": "update: outcome unknown: %s" % type(e).__name__}
        return dict(version_fields(data, stat), type="ok")

    # ---- watcher ----

    def watch(self, req):
        key = req["key"]
        with self.mu:
            if key in self.applied:
                return {"type": "fail", "error": "already watching " + key}
            try:
                data, stat = self.call(self.zk.get_async(self.path(key), watch=self.watcher(key)))
            except Exception as e:
                return {"type": "fail", "error": "watch: %s %s" % (type(e).__name__, e)}
            self.applied[key] = (stat.version, data)
            m = dict(version_fields(data, stat), type="ok", id=req["id"], key=key)
            self.say(m)  # under mu: before any applied event of key
            return None

    def watcher(self, key):
        def fired(event):
            threading.Thread(target=self.refresh, args=(key, False), daemon=True).start()
        return fired

    def refresh(self, key, resync):
        """Read key again with a new watch and apply what is newer; retried
        while the connection is lost (an expiry is the next session's
        resync)."""
        deadline = time.monotonic() + self.bound
        while not self.closing and time.monotonic() < deadline:
            try:
                with self.mu:
                    self.reread(key, resync)
                return
            except ConnectionLoss:
                time.sleep(0.05)
            except Exception as e:
                log.warning("refresh %s: %s %s", key, type(e).__name__, e)
                return

    def reread(self, key, resync):
        old_version, old_data = self.applied[key]
        if self.stale_apply and not resync:
            stat = self.call(self.zk.exists_async(self.path(key), watch=self.watcher(key)))
            data = old_data
        else:
            data, stat = self.call(self.zk.get_async(self.path(key), watch=self.watcher(key)))
        if stat is None or stat.version <= old_version:
            return
        self.applied[key] = (stat.version, data)
        self.say(dict(version_fields(data, stat), event="applied", key=key))

    # ---- the loop ----

    def handle(self, line):
        try:
            req = json.loads(line)
            f, key = req["f"], req["key"]
        except (ValueError, KeyError, TypeError) as e:
            m = re.search(r'"id"\s*:\s*(\d+)', line)
            self.say({"id": int(m.group(1)) if m else 0, "type": "fail", "error": "malformed request: %s" % e})
            return
        serve = {"read-config": self.read_config, "update": self.update, "watch": self.watch}.get(f)
        if serve is None:
            self.say({"id": req.get("id", 0), "type": "fail", "error": "unknown f %r" % f})
            return
        m = serve(req)
        if m is not None:
            m["id"], m["key"] = req["id"], key
            self.say(m)

    def run(self):
        self.zk.start(timeout=20)
        self.session = self.zk._session_id
        hello = {"event": "hello", "pid": os.getpid(), "session": "0x%x" % self.session, "workload": "config"}
        pw = self.password()
        if pw:
            hello["password"] = pw
        self.say(hello)
        for line in sys.stdin:
            if line.strip():
                self.handle(line)
        self.closing = True
        sid = self.zk._session_id
        self.zk.stop()
        self.zk.close()
        if sid:
            self.say({"event": "session", "state": "closed", "session": "0x%x" % sid})


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    flags = parse_flags(sys.argv[1:])
    if flags.get("workload") != "config":
        print("config_worker.py serves the config workload only, not %r" % flags.get("workload", "lock"), file=sys.stderr)
        return 2
    Worker(flags).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
