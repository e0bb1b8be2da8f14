// CuratorElection is Apache Curator's LeaderLatch as a zkchaos worker of
// the election workload (docs/worker-protocol.md, "Election"), used as its
// documentation says: one latch per campaign on /leaders/<service>,
// start() then await(timeout), hasLeadership() checked before acting, a
// LeaderLatchListener whose notLeader() means "stop acting as leader".
//
// The term of a leadership is the czxid of the latch's own node
// (getOurPath(), then its stat), read right after await() reports the
// win. A campaign that times out closes its latch, so a candidate that
// lost does not linger in the queue; a new campaign makes a new latch.
// Once demoted, a leadership is over for the protocol even if the latch,
// still started, wins again on its own after a reconnect: the worker acts
// again only after a new campaign (the controller resigns first, which
// closes the latch).
//
// Demotions are reported as the protocol's demoted event. Its state says
// why, from the lost reasons: expired when Curator reported LOST (or the
// latch gave up during it), session-changed when the client came back
// with another session id, and closed when the latch gave its leadership
// up by its own policy with the session alive (Curator's standard error
// policy treats SUSPENDED as the end of leadership): a decision of the
// library, not a loss, so it excuses nothing.
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.data.Stat;

final class CuratorElection extends CuratorBase {
    // ROOT is the parent of every service's candidates (worker.ElectionRoot).
    static final String ROOT = "/leaders";
    // TASK_RETRIES is how often a task call whose reply was lost is sent
    // again, as a real client retries a call that timed out.
    static final int TASK_RETRIES = 3;

    static final class Lead {
        final String service; final LeaderLatch latch; final String node; final long term; final long session;
        // demoted: reported demoted, or resigned (guarded by the worker).
        boolean demoted;
        Lead(String service, LeaderLatch latch, String node, long term, long session) {
            this.service = service; this.latch = latch; this.node = node; this.term = term; this.session = session;
        }
    }

    // leads are the leaderships a campaign answered ok and no resign has
    // ended yet, by service; lostSeen is set by a LOST until the next
    // connect; closing stops events once shutdown began. Guarded by this.
    final Map<String, Lead> leads = new HashMap<>();
    boolean lostSeen;
    boolean closing;

    CuratorElection(Flags f) { super(f, null); }

    @Override String helloWorkload() { return "election"; }

    @Override Map<String, Object> handle(Map<String, Object> req) {
        Object f = req.get("f");
        Object key = req.get("key");
        if (!(f instanceof String)) return obj("type", "fail", "error", "missing f");
        if (!(key instanceof String) || ((String) key).isEmpty()) return obj("type", "fail", "error", f + ": missing key");
        String k = (String) key;
        boolean service = f.equals("campaign") || f.equals("resign") || f.equals("scan");
        if (service && k.contains("/")) return obj("type", "fail", "error", f + ": bad service " + k);
        Map<String, Object> r;
        switch ((String) f) {
            case "campaign": r = campaign(k, num(req.get("timeout_ms"))); break;
            case "resign": r = resign(k); break;
            case "scan": r = scan(); break;
            case "claim": r = taskCall("claim", k, 0); break;
            case "complete": r = taskCall("complete", k, num(req.get("work_ms"))); break;
            default: return obj("type", "fail", "error", "unknown f \"" + f + "\"");
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("key", k);
        m.putAll(r);
        return m;
    }

    // campaign starts a fresh latch and waits up to timeoutMs for it to
    // lead; a latch that does not lead in time is closed.
    Map<String, Object> campaign(String service, long timeoutMs) {
        if (timeoutMs <= 0) return obj("type", "fail", "error", "campaign: timeout_ms must be positive");
        Lead old;
        synchronized (this) {
            old = leads.get(service);
            if (old != null && !old.demoted) return obj("type", "fail", "error", "already leading " + service);
            leads.remove(service);
        }
        if (old != null) closeLatch(old.latch);
        LeaderLatch latch = new LeaderLatch(client, ROOT + "/" + service, String.valueOf(process));
        AtomicReference<Lead> won = new AtomicReference<>();
        latch.addListener(new LeaderLatchListener() {
            @Override public void isLeader() { }
            @Override public void notLeader() { Lead l = won.get(); if (l != null) demote(l, null); }
        });
        boolean got;
        try {
            latch.start();
            got = latch.await(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            closeLatch(latch);
            return obj("type", "info", "error", "campaign: " + e);
        }
        if (!got) {
            closeLatch(latch);
            return obj("type", "fail", "error", "timeout");
        }
        String node = latch.getOurPath();
        Stat st;
        try {
            st = node == null ? null : client.checkExists().forPath(node);
        } catch (Exception e) {
            closeLatch(latch);
            return obj("type", "info", "error", "campaign: term of " + node + ": " + e);
        }
        if (st == null) {
            closeLatch(latch);
            return obj("type", "info", "error", "campaign: latch node " + node + " is gone right after winning");
        }
        Lead l = new Lead(service, latch, node, st.getCzxid(), st.getEphemeralOwner());
        synchronized (this) {
            won.set(l);
            if (!latch.hasLeadership()) {
                // notLeader came before won was set: nobody learnt of
                // this leadership, and it is over.
                l.demoted = true;
            } else {
                leads.put(service, l);
            }
        }
        if (l.demoted) {
            closeLatch(latch);
            return obj("type", "fail", "error", "lost leadership before answering");
        }
        log("leading " + service + " node " + node + " term " + l.term);
        return obj("type", "ok", "token", l.term, "node", node);
    }

    // resign closes the latch, which deletes its node (a guaranteed
    // background delete, so a session that lives on cannot keep it). A
    // leadership already demoted answers revoked, as a lost lock's release.
    Map<String, Object> resign(String service) {
        Lead l;
        boolean wasDemoted;
        synchronized (this) {
            l = leads.remove(service);
            if (l == null) return obj("type", "fail", "error", "not held");
            wasDemoted = l.demoted;
            l.demoted = true; // the close's notLeader is no demotion
        }
        closeLatch(l.latch);
        if (wasDemoted) return obj("type", "fail", "node", l.node, "token", l.term, "error", "revoked");
        log("resigned " + service + " node " + l.node);
        return obj("type", "ok", "node", l.node, "token", l.term);
    }

    static void closeLatch(LeaderLatch latch) {
        try { latch.close(); } catch (Exception e) { log("closing latch: " + e); }
    }

    // leading is the check right before acting: a leadership not demoted
    // whose latch still says it leads.
    synchronized Lead leading() {
        for (Lead l : leads.values()) if (!l.demoted && l.latch.hasLeadership()) return l;
        return null;
    }

    // scan reads the task table of the service it leads: value is how many
    // tasks are not SUCCEEDED, current_token the service's term.
    Map<String, Object> scan() {
        Lead l = leading();
        if (l == null) return obj("type", "fail", "error", "not leading");
        Posted p = post("/task/scan", obj("service", l.service));
        Map<String, Object> rep = p.reply();
        if (rep == null) return obj("type", p.definite() ? "fail" : "info", "error", p.describe("task/scan"));
        long pending = 0;
        if (rep.get("tasks") instanceof Map) {
            for (Object st : ((Map<?, ?>) rep.get("tasks")).values()) {
                if (!(st instanceof Map) || !"SUCCEEDED".equals(((Map<?, ?>) st).get("state"))) pending++;
            }
        }
        return obj("type", "ok", "token", l.term, "value", pending, "current_token", num(rep.get("term")));
    }

    // taskCall claims or completes a task under the term. A complete
    // spends workMs on the task's work first without checking again (the
    // window a pause turns stale) and presents the result id r-TERM-TASK.
    // A call whose reply was lost is sent again, up to TASK_RETRIES times.
    Map<String, Object> taskCall(String f, String task, long workMs) {
        Lead l = leading();
        if (l == null) return obj("type", "fail", "error", "not leading");
        String result = f.equals("complete") ? "r-" + l.term + "-" + task : null;
        if (workMs > 0) sleep(workMs);
        Map<String, Object> body = obj("service", l.service, "task", task, "term", l.term, "process", (long) process, "pid", pid, "result", result);
        Posted p = null;
        for (int attempt = 0; attempt <= TASK_RETRIES; attempt++) {
            p = post("/task/" + f, body);
            if (p.definite() || p.reply() != null) break;
            log("task call: reply lost, retrying: " + f + " " + task + " try " + (attempt + 1) + ": " + p.describe("task/" + f));
        }
        return taskReply(p, "task/" + f, l.term);
    }

    // taskReply answers as the Go worker does: ok when accepted or refused
    // as already done (the stored result is the answer), fail when refused
    // otherwise, info when the outcome is unknown.
    static Map<String, Object> taskReply(Posted p, String op, long term) {
        Map<String, Object> rep = p.reply();
        if (rep == null) return obj("type", p.definite() ? "fail" : "info", "token", term, "error", p.describe(op));
        boolean accepted = Boolean.TRUE.equals(rep.get("accepted"));
        String reason = rep.get("reason") instanceof String ? (String) rep.get("reason") : "";
        Map<String, Object> m = obj("type", accepted || reason.equals("done") ? "ok" : "fail", "token", term,
            "current_token", num(rep.get("term")), "accepted", accepted, "state", nonEmpty(rep.get("state")),
            "digest", nonEmpty(rep.get("result")));
        if (!"ok".equals(m.get("type"))) m.put("error", "rejected: " + reason);
        return m;
    }

    static String nonEmpty(Object o) { return o instanceof String && !((String) o).isEmpty() ? (String) o : null; }

    // demote ends l once and reports it; why null asks the connection
    // state seen so far.
    synchronized void demote(Lead l, String why) {
        if (closing || l.demoted) return;
        l.demoted = true;
        if (why == null) why = lostSeen ? "expired" : currentSession() != l.session ? "session-changed" : "closed";
        log("demoted from " + l.service + " term " + l.term + ": " + why);
        event(demotedEvent(l, why));
    }

    static Map<String, Object> demotedEvent(Lead l, String why) {
        return obj("event", "demoted", "key", l.service, "token", l.term, "node", l.node, "state", why, "session", hex(l.session));
    }

    @Override synchronized void onState(ConnectionState st) {
        if (closing) return;
        switch (st) {
            case CONNECTED:
            case RECONNECTED: {
                long id = currentSession();
                session = id;
                usable = true;
                lostSeen = false;
                event(obj("event", "session", "state", "connected", "session", hex(id), "password", password()));
                for (Lead l : new ArrayList<>(leads.values())) if (l.session != id) demote(l, "session-changed");
                break;
            }
            case SUSPENDED:
                usable = false;
                event(obj("event", "session", "state", "disconnected", "session", hex(session)));
                break;
            case LOST:
                usable = false;
                lostSeen = true;
                event(obj("event", "session", "state", "expired", "session", hex(session)));
                for (Lead l : new ArrayList<>(leads.values())) demote(l, "expired");
                break;
            default:
                break;
        }
    }

    // shutdown closes the client, which closes the session and with it
    // every latch's node; then the close and the leaderships it ended.
    @Override void shutdown() {
        List<Lead> gone = new ArrayList<>();
        long sess;
        synchronized (this) {
            closing = true;
            for (Lead l : leads.values()) if (!l.demoted) gone.add(l);
            leads.clear();
            sess = session;
        }
        client.close();
        synchronized (this) {
            if (sess != 0) event(obj("event", "session", "state", "closed", "session", hex(sess)));
            for (Lead l : gone) event(demotedEvent(l, "closed"));
        }
    }
}
