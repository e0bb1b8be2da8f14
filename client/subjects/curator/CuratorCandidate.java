// CuratorCandidate is what the Curator election workers (CuratorElection:
// LeaderLatch; CuratorSelector: LeaderSelector) share: the election
// protocol of docs/worker-protocol.md ("Election") around a recipe that
// decides who leads. A subclass runs the campaign with its recipe, tells
// whether a leadership it won still holds (stillLeads) and gives one up
// (giveUp); this class keeps the leaderships the campaigns answered ok,
// resigns them, serves scan, claim and complete under the term (a
// complete's work cancelled when the leadership ends), and reports
// demotions.
//
// Demotions are reported as the protocol's demoted event. Its state says
// why, from the lost reasons: expired when Curator reported LOST (or the
// recipe gave up during it), session-changed when the client came back
// with another session id, and closed when the recipe gave its leadership
// up by its own policy with the session alive (Curator's standard error
// policy treats SUSPENDED as the end of leadership): a decision of the
// library, not a loss, so it excuses nothing. Once demoted, a leadership
// is over for the protocol: the worker acts again only after a new
// campaign (the controller resigns first).
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

import org.apache.curator.framework.state.ConnectionState;

abstract class CuratorCandidate<H> extends CuratorBase {
    // ROOT is the parent of every service's candidates (recipes' election root).
    static final String ROOT = "/leaders";
    // TASK_RETRIES is how often a task call whose reply was lost is sent
    // again, as a real client retries a call that timed out.
    static final int TASK_RETRIES = 3;

    // Lead is a leadership a campaign answered ok; handle is the recipe's
    // (a latch, a selector's turn).
    static final class Lead<H> {
        final String service; final H handle; final String node; final long term; final long session;
        // demoted: reported demoted, or resigned (guarded by the worker).
        boolean demoted;
        Lead(String service, H handle, String node, long term, long session) {
            this.service = service; this.handle = handle; this.node = node; this.term = term; this.session = session;
        }
    }

    // leads are the leaderships a campaign answered ok and no resign has
    // ended yet, by service; lostSeen is set by a LOST until the next
    // connect; closing stops events once shutdown began. Guarded by this.
    final Map<String, Lead<H>> leads = new HashMap<>();
    boolean lostSeen;
    boolean closing;

    CuratorCandidate(Flags f) { super(f, null); }

    // campaign runs for leader of service, waiting up to timeoutMs; it
    // starts with clearFor and ends with answerWon when it won.
    abstract Map<String, Object> campaign(String service, long timeoutMs);

    // stillLeads tells, under this lock, whether the recipe still says l
    // leads: the check right before acting.
    abstract boolean stillLeads(Lead<H> l);

    // giveUp ends the recipe's hold of a leadership (or of a campaign's
    // place in the queue); called without this lock.
    abstract void giveUp(H handle);

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
            case "campaign": {
                long timeoutMs = num(req.get("timeout_ms"));
                r = timeoutMs > 0 ? campaign(k, timeoutMs) : obj("type", "fail", "error", "campaign: timeout_ms must be positive");
                break;
            }
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

    // clearFor makes way for a new campaign of service: null if it may go
    // on, else the answer (a leadership not demoted is still on record). A
    // demoted one is dropped and given up.
    Map<String, Object> clearFor(String service) {
        Lead<H> old;
        synchronized (this) {
            old = leads.get(service);
            if (old != null && !old.demoted) return obj("type", "fail", "error", "already leading " + service);
            leads.remove(service);
        }
        if (old != null) giveUp(old.handle);
        return null;
    }

    // answerWon records a won leadership and answers the campaign. still
    // is asked under this lock, after which a demotion finds l: false means
    // the leadership ended before anyone learnt of it, and it is given up.
    Map<String, Object> answerWon(Lead<H> l, BooleanSupplier still) {
        boolean ok;
        synchronized (this) {
            ok = still.getAsBoolean() && !closing;
            if (ok) leads.put(l.service, l); else l.demoted = true;
        }
        if (!ok) {
            giveUp(l.handle);
            return obj("type", "fail", "error", "lost leadership before answering");
        }
        log("leading " + l.service + " node " + l.node + " term " + l.term);
        return obj("type", "ok", "token", l.term, "node", l.node);
    }

    // resign gives the leadership up, which deletes its node. A leadership
    // already demoted answers revoked, as a lost lock's release.
    Map<String, Object> resign(String service) {
        Lead<H> l;
        boolean wasDemoted;
        synchronized (this) {
            l = leads.remove(service);
            if (l == null) return obj("type", "fail", "error", "not held");
            wasDemoted = l.demoted;
            l.demoted = true; // what giving up reports is no demotion
        }
        giveUp(l.handle);
        if (wasDemoted) return obj("type", "fail", "node", l.node, "token", l.term, "error", "revoked");
        log("resigned " + service + " node " + l.node);
        return obj("type", "ok", "node", l.node, "token", l.term);
    }

    // leading is the check right before acting: a leadership not demoted
    // whose recipe still says it leads.
    synchronized Lead<H> leading() {
        for (Lead<H> l : leads.values()) if (!l.demoted && stillLeads(l)) return l;
        return null;
    }

    // scan reads the task table of the service it leads: value is how many
    // tasks are not SUCCEEDED, current_token the service's term.
    Map<String, Object> scan() {
        Lead<H> l = leading();
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
    // spends workMs on the task's work first, cancelled as soon as the
    // leadership ends (a task executor must be cancellable:
    // docs/background.md#leader-election; the protocol's demoted-work rule), and presents the result id
    // r-TERM-TASK. Leadership is checked again before the call and before
    // each of the up to TASK_RETRIES resends of a call whose reply was lost.
    Map<String, Object> taskCall(String f, String task, long workMs) {
        Lead<H> l = leading();
        if (l == null) return obj("type", "fail", "error", "not leading");
        String result = f.equals("complete") ? "r-" + l.term + "-" + task : null;
        long end = System.nanoTime() + workMs * 1_000_000L;
        while (leading() == l) {
            long left = end - System.nanoTime();
            if (left <= 0) break;
            sleep(Math.min(5, Math.max(1, left / 1_000_000L)));
        }
        if (leading() != l) {
            return obj("type", "fail", "token", l.term, "error", f + ": leadership lost during the work: task cancelled, nothing sent");
        }
        Map<String, Object> body = obj("service", l.service, "task", task, "term", l.term, "process", (long) process, "pid", pid, "result", result);
        Posted p = null;
        for (int attempt = 0; attempt <= TASK_RETRIES; attempt++) {
            if (attempt > 0 && leading() != l) {
                log("task call: reply lost and leadership gone: not retrying " + f + " " + task);
                break;
            }
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
    synchronized void demote(Lead<H> l, String why) {
        if (closing || l.demoted) return;
        l.demoted = true;
        if (why == null) why = lostSeen ? "expired" : currentSession() != l.session ? "session-changed" : "closed";
        log("demoted from " + l.service + " term " + l.term + ": " + why);
        event(demotedEvent(l, why));
    }

    static Map<String, Object> demotedEvent(Lead<?> l, String why) {
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
                for (Lead<H> l : new ArrayList<>(leads.values())) if (l.session != id) demote(l, "session-changed");
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
                for (Lead<H> l : new ArrayList<>(leads.values())) demote(l, "expired");
                break;
            default:
                break;
        }
    }

    // shutdown closes the client, which closes the session and with it
    // every candidate's node; then the close and the leaderships it ended.
    @Override void shutdown() {
        List<Lead<H>> gone = new ArrayList<>();
        long sess;
        synchronized (this) {
            closing = true;
            for (Lead<H> l : leads.values()) if (!l.demoted) gone.add(l);
            leads.clear();
            sess = session;
        }
        client.close();
        synchronized (this) {
            if (sess != 0) event(obj("event", "session", "state", "closed", "session", hex(sess)));
            for (Lead<H> l : gone) event(demotedEvent(l, "closed"));
        }
    }
}
