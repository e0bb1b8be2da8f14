// CuratorSelector is Apache Curator's LeaderSelector as a zkchaos worker
// of the election workload (docs/worker-protocol.md, "Election"), used as
// its documentation says: a LeaderSelector per service on
// /leaders/<service>, whose listener's takeLeadership(client) holds the
// leadership for as long as it does not return, and whose stateChanged
// has LeaderSelectorListenerAdapter's semantics: at SUSPENDED and LOST it
// throws CancelLeadershipException, on which Curator interrupts the
// thread in takeLeadership. The protocol around it (resign, scan, task
// calls, demoted events) is CuratorCandidate's, shared with
// CuratorElection (LeaderLatch).
//
// A campaign is a turn in the selector's queue (start() the first time,
// requeue() after) and waits up to timeout_ms for takeLeadership to be
// entered for it. No autoRequeue: a turn that ends is over, and the next
// campaign queues again. Inside takeLeadership the worker finds its own
// node among the service's children, in Curator's lock order: the child
// holding its participant id (setId: p<process>, which Curator writes
// into the node), owned by the client's current session, and first in the
// queue (the holder of the selector's mutex). Its czxid is the term.
// Without such a node, takeLeadership returns at once: the campaign fails
// and nothing is done under it.
//
// resign makes takeLeadership return (Curator then releases the mutex,
// deleting the node). A campaign that times out abandons its turn: it
// interrupts the queued attempt (Curator deletes its node) or, if
// takeLeadership was entered just then, lets it return. Any other end of
// takeLeadership (the adapter's interruption, an error) is a demotion,
// reported at the state change already: SUSPENDED and LOST stop the
// worker acting at once, before the thread has unwound.
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.LockInternals;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

final class CuratorSelector extends CuratorCandidate<CuratorSelector.Turn> {
    // LOCK_NAME is the name LeaderSelector's mutex gives its nodes, before
    // the sequence number (LeaderSelector's own constant is private).
    static final String LOCK_NAME = "lock-";
    // EXIT_WAIT bounds how long a resign waits for takeLeadership to return.
    static final long EXIT_WAIT_MS = 5000;

    // Turn is one campaign's turn in a selector's queue. Its fields are
    // guarded by the worker.
    static final class Turn {
        final String service;
        final CountDownLatch answered = new CountDownLatch(1); // takeLeadership won or refused it
        final CountDownLatch release = new CountDownLatch(1);  // let takeLeadership return
        final CountDownLatch exited = new CountDownLatch(1);   // takeLeadership returned
        boolean abandoned; // the campaign timed out, or the turn was given up
        boolean inside;    // takeLeadership is running for it
        boolean cancelled; // the adapter's state change ended it
        String node; Stat stat; String refused;
        Lead<Turn> lead;   // once the campaign answered ok
        Turn(String service) { this.service = service; }
    }

    // Queue is a service's selector, and the turn its takeLeadership serves.
    final class Queue extends LeaderSelectorListenerAdapter {
        final String service; final String path; final LeaderSelector selector;
        boolean started;
        Turn current; // guarded by the worker
        Queue(String service) {
            this.service = service;
            this.path = ROOT + "/" + service;
            this.selector = new LeaderSelector(client, path, this);
            selector.setId(participantId());
        }
        @Override public void takeLeadership(CuratorFramework c) throws Exception { lead(this); }
        @Override public void stateChanged(CuratorFramework c, ConnectionState st) {
            if (c.getConnectionStateErrorPolicy().isErrorState(st)) stopActing(this, st);
            super.stateChanged(c, st); // throws CancelLeadershipException at an error state
        }
    }

    final Map<String, Queue> queues = new HashMap<>(); // by service, guarded by this

    CuratorSelector(Flags f) { super(f); }

    @Override Map<String, Object> campaign(String service, long timeoutMs) {
        Map<String, Object> busy = clearFor(service);
        if (busy != null) return busy;
        Queue q;
        Turn t;
        synchronized (this) {
            q = queues.computeIfAbsent(service, Queue::new);
            t = new Turn(service);
            q.current = t;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        try {
            if (!q.started) {
                q.selector.start();
                q.started = true;
            }
            // requeue is refused while an earlier turn is still unwinding
            // (or was just interrupted by a state change): ask again until
            // the selector takes it, or takeLeadership answers.
            while (true) {
                q.selector.requeue();
                long left = deadline - System.nanoTime();
                if (left <= 0 || t.answered.await(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)), TimeUnit.NANOSECONDS)) break;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            abandon(q, t);
            return obj("type", "info", "error", "campaign: interrupted");
        } catch (Exception e) {
            abandon(q, t);
            return obj("type", "info", "error", "campaign: " + e);
        }
        String node, refused;
        Stat st;
        boolean late;
        synchronized (this) {
            // Answers are given under this lock: what is read here is one
            // state, and a takeLeadership entered now sees the turn abandoned.
            late = t.answered.getCount() > 0;
            if (late) t.abandoned = true;
            node = t.node; st = t.stat; refused = t.refused;
        }
        if (late) {
            abandon(q, t);
            return obj("type", "fail", "error", "timeout");
        }
        if (refused != null) {
            giveUp(t);
            return obj("type", "fail", "error", "campaign: took leadership, but " + refused);
        }
        Lead<Turn> l = new Lead<>(service, t, node, st.getCzxid(), st.getEphemeralOwner());
        // A state change before lead is set finds no lead to demote: it
        // marks the turn cancelled instead, which this sees.
        return answerWon(l, () -> { t.lead = l; return t.inside && !t.cancelled && !t.abandoned; });
    }

    // lead is takeLeadership: it serves the queue's current turn, if any
    // campaign still waits for it, and holds the leadership until the turn
    // is released or Curator interrupts it.
    void lead(Queue q) throws InterruptedException {
        Turn t;
        synchronized (this) {
            t = q.current;
            if (t == null || t.abandoned || t.inside || t.answered.getCount() == 0 || closing) return;
            t.inside = true;
        }
        try {
            String refused = null;
            Own own = null;
            try {
                own = ownNode(q);
            } catch (NotOurs e) {
                refused = e.getMessage();
            } catch (InterruptedException e) {
                throw e;
            } catch (Exception e) {
                refused = "finding our node: " + e;
            }
            synchronized (this) {
                if (refused == null) { t.node = own.node; t.stat = own.stat; } else t.refused = refused;
                t.answered.countDown();
            }
            if (refused != null) {
                log("refusing leadership of " + q.service + ": " + refused);
                return;
            }
            t.release.await();
        } finally {
            Lead<Turn> l;
            synchronized (this) {
                t.inside = false;
                if (t.answered.getCount() > 0) { t.refused = "takeLeadership ended before finding our node"; t.answered.countDown(); }
                l = t.lead;
            }
            // Unless resigned (demoted already), an end is a demotion.
            if (l != null) demote(l, null);
            t.exited.countDown();
        }
    }

    static final class Own {
        final String node; final Stat stat;
        Own(String node, Stat stat) { this.node = node; this.stat = stat; }
    }

    static final class NotOurs extends Exception {
        private static final long serialVersionUID = 1L;
        NotOurs(String msg) { super(msg); }
    }

    // participantId is the id Curator writes into this worker's nodes
    // (what getParticipants reports).
    String participantId() { return "p" + process; }

    // ownNode is the path of this participant's node: among the service's
    // children in Curator's lock order, the one whose data is our id and
    // whose owner is the client's current session; it must be first, since
    // takeLeadership runs while the selector's mutex is held.
    Own ownNode(Queue q) throws Exception {
        List<String> sorted = LockInternals.getSortedChildren(client, q.path, LOCK_NAME, new StandardLockInternalsDriver());
        long cur = currentSession();
        byte[] id = participantId().getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < sorted.size(); i++) {
            String path = q.path + "/" + sorted.get(i);
            Stat st = new Stat();
            byte[] data;
            try {
                data = client.getData().storingStatIn(st).forPath(path);
            } catch (KeeperException.NoNodeException e) {
                continue;
            }
            if (st.getEphemeralOwner() != cur || !Arrays.equals(data, id)) continue;
            if (i != 0) throw new NotOurs("our node " + path + " is number " + (i + 1) + " in the queue, not first: " + sorted);
            return new Own(path, st);
        }
        throw new NotOurs("no node of participant " + participantId() + " owned by our session " + hex(cur) + " among " + sorted);
    }

    // stopActing is the adapter's state change at SUSPENDED or LOST, before
    // Curator interrupts takeLeadership: a leadership is demoted at once
    // (expired at LOST; at SUSPENDED as the connection state tells); a
    // turn inside takeLeadership not yet answered is cancelled.
    void stopActing(Queue q, ConnectionState st) {
        Lead<Turn> l = null;
        synchronized (this) {
            Turn t = q.current;
            if (t == null || !t.inside) return;
            t.cancelled = true;
            l = t.lead;
        }
        if (l != null) demote(l, st == ConnectionState.LOST ? "expired" : null);
    }

    @Override boolean stillLeads(Lead<Turn> l) {
        Turn t = l.handle;
        return t.inside && !t.cancelled && !t.abandoned && queueOf(t).selector.hasLeadership();
    }

    synchronized Queue queueOf(Turn t) { return queues.get(t.service); }

    // giveUp lets takeLeadership return for the turn, and waits a while for
    // it to: Curator then releases the mutex, deleting the node.
    @Override void giveUp(Turn t) {
        synchronized (this) { t.abandoned = true; }
        t.release.countDown();
        boolean wasInside;
        synchronized (this) { wasInside = t.inside; }
        if (!wasInside) return;
        try {
            if (!t.exited.await(EXIT_WAIT_MS, TimeUnit.MILLISECONDS)) log("takeLeadership of " + t.service + " did not return in " + EXIT_WAIT_MS + "ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // abandon ends a turn whose campaign gave up: a takeLeadership entered
    // just now returns, and a turn still queued for the mutex is
    // interrupted, which deletes its node.
    void abandon(Queue q, Turn t) {
        boolean inside;
        synchronized (this) {
            t.abandoned = true;
            inside = t.inside;
        }
        t.release.countDown();
        if (!inside) q.selector.interruptLeadership();
    }
}
