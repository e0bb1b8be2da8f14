// CuratorElection is Apache Curator's LeaderLatch as a zkchaos worker of
// the election workload (docs/worker-protocol.md, "Election"), used as its
// documentation says: one latch per campaign on /leaders/<service>,
// start() then await(timeout), hasLeadership() checked before acting, a
// LeaderLatchListener whose notLeader() means "stop acting as leader".
// The protocol around it (resign, scan, task calls, demoted events) is
// CuratorCandidate's, shared with CuratorSelector.
//
// The term of a leadership is the czxid of the latch's own node
// (getOurPath(), then its stat), read right after await() reports the
// win. The worker does not ask whose node that is: checking its
// ephemeralOwner against the current session is the CURATOR-696 fix,
// which Curator 5.4 lacks, and a user of the latch as documented does not
// do it either (docs/zoo.md, "CURATOR-696"); LeaderSelector's worker finds
// its node by owner because that API names no node at all. A campaign that
// times out closes its latch, so a candidate that lost does not linger in
// the queue; a new campaign makes a new latch. Once demoted, a leadership
// is over for the protocol even if the latch, still started, wins again on
// its own after a reconnect: the worker acts again only after a new
// campaign (the controller resigns first, which closes the latch).
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.zookeeper.data.Stat;

final class CuratorElection extends CuratorCandidate<LeaderLatch> {
    CuratorElection(Flags f) { super(f); }

    // campaign starts a fresh latch and waits up to timeoutMs for it to
    // lead; a latch that does not lead in time is closed.
    @Override Map<String, Object> campaign(String service, long timeoutMs) {
        Map<String, Object> busy = clearFor(service);
        if (busy != null) return busy;
        LeaderLatch latch = new LeaderLatch(client, ROOT + "/" + service, String.valueOf(process));
        AtomicReference<Lead<LeaderLatch>> won = new AtomicReference<>();
        latch.addListener(new LeaderLatchListener() {
            @Override public void isLeader() { }
            @Override public void notLeader() { Lead<LeaderLatch> l = won.get(); if (l != null) demote(l, null); }
        });
        boolean got;
        try {
            latch.start();
            got = latch.await(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            giveUp(latch);
            return obj("type", "info", "error", "campaign: " + e);
        }
        if (!got) {
            giveUp(latch);
            return obj("type", "fail", "error", "timeout");
        }
        String node = latch.getOurPath();
        Stat st;
        try {
            st = node == null ? null : client.checkExists().forPath(node);
        } catch (Exception e) {
            giveUp(latch);
            return obj("type", "info", "error", "campaign: term of " + node + ": " + e);
        }
        if (st == null) {
            giveUp(latch);
            return obj("type", "fail", "error", "campaign: won, but node " + node + " is gone");
        }
        Lead<LeaderLatch> l = new Lead<>(service, latch, node, st.getCzxid(), st.getEphemeralOwner());
        // A notLeader before won is set reaches nobody; hasLeadership
        // tells, after it is set, whether one came.
        return answerWon(l, () -> { won.set(l); return latch.hasLeadership(); });
    }

    @Override boolean stillLeads(Lead<LeaderLatch> l) { return l.handle.hasLeadership(); }

    // giveUp closes the latch, which deletes its node (a guaranteed
    // background delete, so a session that lives on cannot keep it).
    @Override void giveUp(LeaderLatch latch) {
        try { latch.close(); } catch (Exception e) { log("closing latch: " + e); }
    }
}
