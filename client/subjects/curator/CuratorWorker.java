// CuratorWorker is Apache Curator's InterProcessMutex as a zkchaos worker:
// the worker protocol of docs/worker-protocol.md (requests on stdin,
// responses and events on stdout, one JSON object per line, logs on
// stderr), with Curator used as its documentation says: one mutex per lock
// path, acquire with a timeout, a ConnectionStateListener that treats
// SUSPENDED as "stop protected work" and LOST as "the lock is gone".
//
// Three things Curator does not offer are added around it, each where the
// protocol needs an exact answer (docs/worker-protocol.md):
//   - release: InterProcessMutex.release() ignores a node that is already
//     gone and retries a delete whose reply was lost, so it cannot tell
//     "released" from "revoked" from "unknown". The worker deletes its own
//     node once with the plain ZooKeeper handle, judges the outcome as the
//     seed recipe does, and then lets Curator clear its bookkeeping.
//   - wake-ups: LockInternals waits on a watcher it keeps private. The
//     worker gives Curator a ZooKeeper handle whose getData(path, watcher)
//     wraps each watcher, tagged with the acquire that set it, and counts a
//     notification when it fires during that same acquire.
//   - closing: at the end of stdin it closes the client and reports the
//     session closed and every grant it ended (lost, state closed).
//
// It needs nothing but Curator 5, ZooKeeper and the JDK. The line I/O, the
// flags, the client with its credentials and the register calls are
// CuratorBase's, shared with the election workers (CuratorElection, or
// CuratorSelector with --curator-recipe selector), which main starts
// instead with --workload election.
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.utils.ZookeeperFactory;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.admin.ZooKeeperAdmin;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.Stat;

public final class CuratorWorker extends CuratorBase {
    // The mutex's own node is only reachable from a subclass.
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework c, String path) { super(c, path); }
        String lockPath() { return getLockPath(); }
    }

    static final class Grant {
        final String key; final String node; final long token; final long session;
        // lost: reported lost (the listener sets it, under the worker's lock).
        boolean lost;
        Grant(String key, String node, long token, long session) { this.key = key; this.node = node; this.token = token; this.session = session; }
    }

    // acquiring is the id of the acquire in progress (0: none); wakeups
    // counts its wake-ups. Only the main thread acquires, one at a time.
    static volatile long acquiring;
    static final AtomicLong wakeups = new AtomicLong();

    // CountingWatcher is a watcher set during acquire `acquire`; a
    // notification (not a session event) that fires while that acquire is
    // still in progress is one wake-up. Equality follows the wrapped
    // watcher and the acquire, so ZooKeeper's de-duplication of a watcher
    // set twice on one path still works within an acquire.
    static final class CountingWatcher implements Watcher {
        final Watcher inner; final long acquire;
        CountingWatcher(Watcher inner, long acquire) { this.inner = inner; this.acquire = acquire; }
        @Override public void process(WatchedEvent e) {
            if (e.getType() != Watcher.Event.EventType.None && acquire != 0 && acquire == acquiring) wakeups.incrementAndGet();
            inner.process(e);
        }
        @Override public boolean equals(Object o) {
            return o instanceof CountingWatcher && ((CountingWatcher) o).inner.equals(inner) && ((CountingWatcher) o).acquire == acquire;
        }
        @Override public int hashCode() { return Objects.hash(inner, acquire); }
    }

    // CountingZooKeeper is the handle Curator gets: LockInternals waits
    // with getData(path, watcher, stat), so that is where its watcher is
    // wrapped; everything else is ZooKeeper's own.
    static final class CountingZooKeeper extends ZooKeeperAdmin {
        CountingZooKeeper(String cs, int st, Watcher w, boolean ro) throws java.io.IOException { super(cs, st, w, ro); }
        CountingZooKeeper(String cs, int st, Watcher w, boolean ro, ZKClientConfig cfg) throws java.io.IOException { super(cs, st, w, ro, cfg); }
        @Override public byte[] getData(String path, Watcher watcher, Stat stat) throws KeeperException, InterruptedException {
            return super.getData(path, watcher == null ? null : new CountingWatcher(watcher, acquiring), stat);
        }
    }

    static final ZookeeperFactory countingFactory = new ZookeeperFactory() {
        @Override public ZooKeeper newZooKeeper(String cs, int st, Watcher w, boolean ro) throws Exception {
            return new CountingZooKeeper(cs, st, w, ro);
        }
        @Override public ZooKeeper newZooKeeper(String cs, int st, Watcher w, boolean ro, ZKClientConfig cfg) throws Exception {
            return cfg == null ? new CountingZooKeeper(cs, st, w, ro) : new CountingZooKeeper(cs, st, w, ro, cfg);
        }
    };

    final Map<String, Mutex> mutexes = new HashMap<>();
    // grants are guarded by this; the listener thread marks them lost.
    final Map<String, Grant> grants = new HashMap<>();
    // unsure are grants being released, or whose release ended unknown:
    // their node may live as long as their session, so they are reported
    // lost when it ends. Guarded by this.
    final List<Grant> unsure = new ArrayList<>();
    // generation counts session ends (LOST, or a new session id); closing
    // stops the listener once shutdown has begun. Both guarded by this.
    long generation;
    boolean closing;
    long acquireSeq;

    final String root;
    final String tokenKind;

    CuratorWorker(Flags f) {
        super(f, countingFactory);
        this.root = f.root;
        this.tokenKind = f.tokenKind;
    }

    // onState reports session changes, and grants lost with a session.
    // It emits under the worker's lock so that a session event and the
    // lost events it causes are written together and in that order.
    @Override synchronized void onState(ConnectionState st) {
        if (closing) return;
        switch (st) {
            case CONNECTED:
            case RECONNECTED: {
                long id = currentSession();
                List<Grant> lostNow = loseLocked(g -> g.session != id);
                if (session != 0 && id != session) generation++;
                session = id;
                usable = true;
                event(obj("event", "session", "state", "connected", "session", hex(id), "password", password()));
                for (Grant g : lostNow) event(lostEvent(g, "session-changed"));
                break;
            }
            case SUSPENDED:
                usable = false;
                event(obj("event", "session", "state", "disconnected", "session", hex(session)));
                break;
            case LOST: {
                usable = false;
                generation++;
                List<Grant> lostNow = loseLocked(g -> true);
                event(obj("event", "session", "state", "expired", "session", hex(session)));
                for (Grant g : lostNow) event(lostEvent(g, "expired"));
                break;
            }
            default:
                break;
        }
    }

    // loseLocked marks the held and unsure grants that match as lost and
    // returns them; unsure ones are settled by it.
    List<Grant> loseLocked(java.util.function.Predicate<Grant> match) {
        List<Grant> out = new ArrayList<>();
        for (Grant g : grants.values()) if (!g.lost && match.test(g)) { g.lost = true; out.add(g); }
        for (java.util.Iterator<Grant> it = unsure.iterator(); it.hasNext(); ) {
            Grant g = it.next();
            if (!g.lost && match.test(g)) { g.lost = true; out.add(g); it.remove(); }
        }
        return out;
    }

    static Map<String, Object> lostEvent(Grant g, String why) {
        return obj("event", "lost", "key", g.key, "token", g.token, "node", g.node, "state", why, "session", hex(g.session));
    }

    @Override Map<String, Object> handle(Map<String, Object> req) {
        Object f = req.get("f");
        Object key = req.get("key");
        if (!(f instanceof String)) return obj("type", "fail", "error", "missing f");
        if (!(key instanceof String) || ((String) key).isEmpty() || ((String) key).contains("/"))
            return obj("type", "fail", "error", f + ": missing or bad key");
        String k = (String) key;
        Map<String, Object> r;
        switch ((String) f) {
            case "acquire": r = acquire(k, num(req.get("timeout_ms"))); break;
            case "release": r = release(k); break;
            case "read": r = read(k); break;
            case "write":
                if (!(req.get("value") instanceof Long)) return obj("type", "fail", "key", k, "error", "write: missing value");
                r = write(k, (Long) req.get("value"), num(req.get("work_ms")));
                break;
            default: return obj("type", "fail", "error", "unknown f \"" + f + "\"");
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("key", k);
        m.putAll(r);
        return m;
    }

    Map<String, Object> acquire(String key, long timeoutMs) {
        if (timeoutMs <= 0) return obj("type", "fail", "error", "acquire: timeout_ms must be positive");
        Map<String, Object> r = acquireCounted(key, timeoutMs);
        r.put("wakeups", wakeups.get());
        return r;
    }

    // acquireCounted runs one acquire with its own wake-up count: watches
    // set by earlier acquires carry their ids and no longer count.
    Map<String, Object> acquireCounted(String key, long timeoutMs) {
        wakeups.set(0);
        acquiring = ++acquireSeq;
        try {
            return acquireLock(key, timeoutMs);
        } finally {
            acquiring = 0;
        }
    }

    Map<String, Object> acquireLock(String key, long timeoutMs) {
        Mutex mu = mutexes.computeIfAbsent(key, k -> new Mutex(client, root + "/" + k));
        synchronized (this) {
            if (grants.containsKey(key) || mu.isOwnedByCurrentThread()) return obj("type", "fail", "error", "already holding " + key);
        }
        boolean got;
        try {
            got = mu.acquire(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            // Curator deletes its node on the way out (a guaranteed delete
            // that retries in the background), but whether the lock was
            // taken before the failure is not known here.
            return obj("type", "info", "error", "acquire: " + e);
        }
        if (!got) return obj("type", "fail", "error", "timeout");
        String node = mu.lockPath();
        try {
            Stat st = client.checkExists().forPath(node);
            if (st == null) throw new IllegalStateException("lock node " + node + " is gone right after acquire");
            long tok = "seq".equals(tokenKind) ? Long.parseLong(node.substring(node.length() - 10)) : st.getCzxid();
            Grant g = new Grant(key, node, tok, st.getEphemeralOwner());
            synchronized (this) { grants.put(key, g); }
            log("acquired " + key + " node " + node + " token " + tok);
            return obj("type", "ok", "token", tok, "node", node);
        } catch (Exception e) {
            try { mu.release(); } catch (Exception re) { log("release after failed stat: " + re); }
            return obj("type", "info", "error", "acquire: token of " + node + ": " + e);
        }
    }

    // held is the check right before protected work: Curator says we own
    // it, no LOST since, and the connection is not SUSPENDED.
    synchronized Grant held(String key) {
        Grant g = grants.get(key);
        Mutex mu = mutexes.get(key);
        if (g == null || g.lost || mu == null || !mu.isOwnedByCurrentThread()) return null;
        if (!usable || !client.getZookeeperClient().isConnected()) return null;
        return g;
    }

    Map<String, Object> read(String key) {
        Grant g = held(key);
        if (g == null) return obj("type", "fail", "error", "not holding " + key);
        return registerCall("/read", obj("key", key, "token", g.token, "process", (long) process, "pid", pid), g.token, null);
    }

    Map<String, Object> write(String key, long value, long workMs) {
        Grant g = held(key);
        if (g == null) return obj("type", "fail", "error", "not holding " + key);
        if (workMs > 0) {
            try { Thread.sleep(workMs); } catch (InterruptedException e) { return obj("type", "fail", "token", g.token, "error", "interrupted during work"); }
        }
        // No second check: what a real holder does after its work.
        return registerCall("/write", obj("key", key, "value", value, "token", g.token, "process", (long) process, "pid", pid), g.token, value);
    }

    Map<String, Object> registerCall(String path, Map<String, Object> body, long token, Long written) {
        Posted p = post(path, body);
        if (p.error != null) return obj("type", "info", "token", token, "value", written, "error", p.describe(path));
        if (p.definite()) return obj("type", "fail", "token", token, "value", written, "error", p.describe(path));
        if (p.status != 200) return obj("type", "info", "token", token, "value", written, "error", p.describe(path));
        Map<String, Object> rep = p.reply();
        if (rep == null) return obj("type", "info", "token", token, "value", written, "error", "register " + path + ": bad reply: " + p.body);
        if (Boolean.TRUE.equals(rep.get("accepted"))) {
            if (written != null) return obj("type", "ok", "token", token, "accepted", true, "value", written);
            // A read reports which write it observed: the reply's token,
            // the token of the last accepted write.
            return obj("type", "ok", "token", token, "accepted", true, "value", num(rep.get("value")), "current_token", num(rep.get("token")));
        }
        String reason = rep.get("reason") instanceof String ? (String) rep.get("reason") : "";
        return obj("type", "fail", "token", token, "value", written, "accepted", false, "current_token", num(rep.get("fence")),
            "error", reason.isEmpty() ? "rejected" : "rejected: " + reason);
    }

    Map<String, Object> release(String key) {
        Grant g;
        Mutex mu = mutexes.get(key);
        synchronized (this) {
            g = grants.remove(key);
            if (g == null || mu == null || !mu.isOwnedByCurrentThread()) return obj("type", "fail", "error", "not held");
            // From here until the outcome is known an expiry is still this
            // grant's loss, and is reported.
            if (!g.lost) unsure.add(g);
        }
        String outcome = g.lost ? REVOKED : deleteOwn(g);
        forget(key, mu, g, outcome);
        if (OK.equals(outcome)) {
            log("released " + key + " node " + g.node);
            return obj("type", "ok", "node", g.node, "token", g.token);
        }
        if (REVOKED.equals(outcome)) return obj("type", "fail", "node", g.node, "token", g.token, "error", "revoked");
        return obj("type", "info", "node", g.node, "token", g.token, "error", "release: outcome unknown: " + outcome);
    }

    static final String OK = "ok", REVOKED = "revoked";

    // deleteOwn deletes the grant's node with single plain ZooKeeper calls
    // (no retry that could hide a lost reply) and returns OK, REVOKED, or
    // why the outcome is unknown. A NoNode means revoked only if no earlier
    // delete may have been applied; after a lost reply it means our delete
    // went through if the session is the same, and is unknown if the
    // session ended meanwhile (the node went with it either way).
    String deleteOwn(Grant g) {
        long deadline = System.currentTimeMillis() + Math.max(2 * sessionMs, 5000);
        boolean sent = false;
        long gen;
        synchronized (this) { gen = generation; }
        while (true) {
            synchronized (this) {
                if (g.lost || generation != gen) {
                    return sent ? "the connection was lost after the delete of " + g.node + " was sent and the session then ended: the node is gone, but whether this release deleted it is unknown" : REVOKED;
                }
            }
            if (System.currentTimeMillis() > deadline) {
                return "delete of " + g.node + " not confirmed in time (sent before: " + sent + ")";
            }
            if (!usable) { sleep(50); continue; }
            ZooKeeper zk;
            try { zk = client.getZookeeperClient().getZooKeeper(); } catch (Exception e) { sleep(50); continue; }
            try {
                zk.delete(g.node, -1);
                return OK;
            } catch (KeeperException.NoNodeException e) {
                synchronized (this) {
                    if (!sent) return REVOKED;
                    if (!g.lost && generation == gen) return OK; // an earlier delete of ours was applied
                }
            } catch (KeeperException.SessionExpiredException e) {
                // The server refused it: this delete was not applied.
                sleep(50);
            } catch (KeeperException.ConnectionLossException e) {
                sent = true; // it may have reached the server
                sleep(50);
            } catch (Exception e) {
                return "delete of " + g.node + ": " + e;
            }
        }
    }

    // forget settles the grant and clears Curator's own record of the lock.
    // Connected, mu.release() does it (its delete finds the node gone). Not
    // connected, it would block on Curator's retries; the mutex is dropped
    // instead (a fresh one serves the next acquire of the key) and, if the
    // node may still exist, Curator's guaranteed delete removes it in the
    // background once the connection is back.
    void forget(String key, Mutex mu, Grant g, String outcome) {
        synchronized (this) {
            if (OK.equals(outcome) || REVOKED.equals(outcome)) unsure.remove(g);
        }
        if (usable) {
            try { mu.release(); return; } catch (Exception e) { log("clearing Curator's lock record of " + key + ": " + e); }
        }
        mutexes.remove(key);
        if (!OK.equals(outcome) && !REVOKED.equals(outcome)) {
            try { client.delete().guaranteed().inBackground().forPath(g.node); } catch (Exception e) { log("background delete of " + g.node + ": " + e); }
        }
    }

    // shutdown closes the client, which closes the session: the server
    // deletes every node of it at once. The close and the grants it ended
    // are reported after it, the session first.
    @Override void shutdown() {
        List<Grant> gone = new ArrayList<>();
        long sess;
        synchronized (this) {
            closing = true;
            for (Grant g : grants.values()) if (!g.lost) gone.add(g);
            gone.addAll(unsure);
            grants.clear();
            unsure.clear();
            sess = session;
        }
        client.close();
        synchronized (this) {
            if (sess != 0) event(obj("event", "session", "state", "closed", "session", hex(sess)));
            for (Grant g : gone) event(lostEvent(g, "closed"));
        }
    }

    // main starts the worker of the workload named by --workload: this
    // class for the lock; for the election, CuratorElection (LeaderLatch)
    // or, with --curator-recipe selector, CuratorSelector (LeaderSelector),
    // which is an election recipe only.
    public static void main(String[] args) throws Exception {
        Flags f = parseFlags(args);
        String which = f.workload + "/" + f.curatorRecipe;
        switch (which) {
            case "lock/default": new CuratorWorker(f).run(); break;
            case "election/default": case "election/latch": new CuratorElection(f).run(); break;
            case "election/selector": new CuratorSelector(f).run(); break;
            default:
                log("unknown workload and Curator recipe " + which + " (lock with the default; election with latch, the default, or selector)");
                System.exit(255);
        }
        System.exit(0);
    }
}
