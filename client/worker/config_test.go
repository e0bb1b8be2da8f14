package worker

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/host/proc"
)

func configWorker(t *testing.T, process int, recipe string) *Proc {
	t.Helper()
	cfg := testConfig(t, process, testRoot(t))
	cfg.Workload, cfg.Recipe = recipes.WorkloadConfig, recipe
	return startWorker(t, cfg)
}

// configKey creates the test's config node with the data of version 0, as
// the controller does before a run.
func configKey(t *testing.T, obs *zk.Conn) string {
	t.Helper()
	key := strings.ReplaceAll(t.Name(), "/", "_")
	if _, err := obs.Create(recipes.ConfigRoot, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := obs.Create(recipes.ConfigRoot+"/"+key, history.ConfigData(0), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return key
}

func update(t *testing.T, p *Proc, key string, value, expected int64) Message {
	t.Helper()
	return do(t, p, Request{F: "update", Key: key, Value: val(value), ExpectedVersion: val(expected)})
}

func expectVersion(t *testing.T, m Message, version int64, data []byte) {
	t.Helper()
	if m.Version == nil || *m.Version != version || m.Digest != history.ConfigDigest(data) {
		t.Fatalf("got %+v, want version %d digest %s (%q)", m, version, history.ConfigDigest(data), data)
	}
}

// nextApplied is the worker's next applied event within d.
func nextApplied(t *testing.T, p *Proc, d time.Duration) (Message, bool) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case m := <-inboxOf(p).events:
			if m.Event == EventApplied {
				return m, true
			}
		case <-deadline:
			return Message{}, false
		}
	}
}

func TestConfigAdmin(t *testing.T) {
	needZK(t)
	obs := observer(t)
	key := configKey(t, obs)
	a := configWorker(t, 0, "seed")
	if a.Hello().Password == "" {
		t.Errorf("hello without password: %+v", a.Hello())
	}

	r := do(t, a, Request{F: "read-config", Key: key})
	expect(t, r, OK, "")
	expectVersion(t, r, 0, history.ConfigData(0))
	if r.Value == nil || *r.Value != 0 || r.Key != key {
		t.Fatalf("read-config: %+v", r)
	}
	u := update(t, a, key, 17, 0)
	expect(t, u, OK, "")
	expectVersion(t, u, 1, history.ConfigData(17))
	expect(t, update(t, a, key, 18, 0), Fail, "bad version")
	data, st, err := obs.Get(recipes.ConfigRoot + "/" + key)
	if err != nil || st.Version != 1 || string(data) != "n=17\n" {
		t.Fatalf("node after a failed CAS: %q version %d %v", data, st.Version, err)
	}
	expectVersion(t, do(t, a, Request{F: "read-config", Key: key}), 1, history.ConfigData(17))

	expect(t, do(t, a, Request{F: "update", Key: key, Value: val(1)}), Fail, "expected_version")
	expect(t, do(t, a, Request{F: "update", Key: key, ExpectedVersion: val(1)}), Fail, "missing value")
	expect(t, do(t, a, Request{F: "read-config", Key: "no-such-key"}), Fail, "node does not exist")
	expect(t, update(t, a, "no-such-key", 1, 0), Fail, "node does not exist")
	expect(t, do(t, a, Request{F: "acquire", Key: key, TimeoutMS: 100}), Fail, `unknown f "acquire"`)
}

// TestConfigWatchApplies: a correct watcher applies three successive
// updates, in order, each with the digest of what the admin wrote, and no
// applied event comes before its watch's answer.
func TestConfigWatchApplies(t *testing.T) {
	needZK(t)
	obs := observer(t)
	key := configKey(t, obs)
	a, c := configWorker(t, 0, "seed"), configWorker(t, 1, "seed")
	wa := do(t, c, Request{F: "watch", Key: key})
	expect(t, wa, OK, "")
	expectVersion(t, wa, 0, history.ConfigData(0))
	expect(t, do(t, c, Request{F: "watch", Key: key}), Fail, "already watching")
	for i := int64(1); i <= 3; i++ {
		u := update(t, a, key, 100+i, i-1)
		expect(t, u, OK, "")
		m, ok := nextApplied(t, c, 5*time.Second)
		if !ok {
			t.Fatalf("update %d not applied within 5s", i)
		}
		if m.Key != key || *m.Version != *u.Version || m.Digest != u.Digest || *m.Value != 100+i {
			t.Fatalf("applied %+v after update %+v", m, u)
		}
	}
	notes := inboxOf(c).notes()
	if i, j := slices.Index(notes, "complete watch ok"), slices.Index(notes, "event applied "+key); i < 0 || j < i {
		t.Fatalf("watch answer and applied events out of order: %q", notes)
	}
}

// TestConfigResyncAfterExpiry: the watcher's session expires while it is
// paused, the config changes meanwhile (its watch is gone with the
// session, so no notification will ever come), and the watcher must still
// apply the new version once its new session is up.
func TestConfigResyncAfterExpiry(t *testing.T) {
	needZK(t)
	obs := observer(t)
	key := configKey(t, obs)
	a, c := configWorker(t, 0, "seed"), configWorker(t, 1, "seed")
	expect(t, do(t, c, Request{F: "watch", Key: key}), OK, "")
	if err := proc.Pause(c.PID(), time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*testSession + time.Second)
	u := update(t, a, key, 7, 0)
	expect(t, u, OK, "")
	if err := proc.Resume(c.PID(), time.Second); err != nil {
		t.Fatal(err)
	}
	// Expired, then a new session, then the resync's applied event.
	var states []string
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-inboxOf(c).events:
			if m.Event == EventSession {
				states = append(states, m.State)
				continue
			}
			if m.Event != EventApplied {
				continue
			}
			if *m.Version != 1 || m.Digest != u.Digest {
				t.Fatalf("after expiry: applied %+v, want version 1 digest %s", m, u.Digest)
			}
			if i := slices.Index(states, StateExpired); i < 0 || !slices.Contains(states[i:], StateConnected) {
				t.Fatalf("applied after session states %q, want expired then connected", states)
			}
			return
		case <-deadline:
			t.Fatalf("nothing applied within 10s of resuming; session states %q", states)
		}
	}
}

// TestConfigZoo: each zoo client shows its bug in the smallest scenario.
func TestConfigZoo(t *testing.T) {
	needZK(t)
	t.Run("stale-apply", func(t *testing.T) {
		obs := observer(t)
		key := configKey(t, obs)
		a, c := configWorker(t, 0, "seed"), configWorker(t, 1, "stale-apply")
		expect(t, do(t, c, Request{F: "watch", Key: key}), OK, "")
		u := update(t, a, key, 5, 0)
		expect(t, u, OK, "")
		m, ok := nextApplied(t, c, 5*time.Second)
		if !ok {
			t.Fatal("stale-apply applied nothing")
		}
		if *m.Version != 1 || m.Digest == u.Digest || m.Digest != history.ConfigDigest(history.ConfigData(0)) {
			t.Fatalf("stale-apply applied %+v; want version 1 with the digest of version 0 (%s), not %s",
				m, history.ConfigDigest(history.ConfigData(0)), u.Digest)
		}
	})
	t.Run("no-rewatch", func(t *testing.T) {
		obs := observer(t)
		key := configKey(t, obs)
		a, c := configWorker(t, 0, "seed"), configWorker(t, 1, "no-rewatch")
		expect(t, do(t, c, Request{F: "watch", Key: key}), OK, "")
		u1 := update(t, a, key, 1, 0)
		m, ok := nextApplied(t, c, 5*time.Second)
		if !ok || *m.Version != 1 || m.Digest != u1.Digest {
			t.Fatalf("first update: applied %+v (%v)", m, ok)
		}
		expect(t, update(t, a, key, 2, 1), OK, "")
		if m, ok := nextApplied(t, c, 2*time.Second); ok {
			t.Fatalf("no-rewatch applied the second update: %+v", m)
		}
	})
	t.Run("blind-cas", func(t *testing.T) {
		obs := observer(t)
		key := configKey(t, obs)
		a, b := configWorker(t, 0, "blind-cas"), configWorker(t, 1, "blind-cas")
		expect(t, update(t, a, key, 1, 0), OK, "")
		// b read version 0 too; its update must fail, and does not.
		u := update(t, b, key, 2, 0)
		expect(t, u, OK, "")
		if *u.Version != 2 {
			t.Fatalf("blind-cas update: %+v", u)
		}
		data, _, err := obs.Get(recipes.ConfigRoot + "/" + key)
		if err != nil || string(data) != "n=2\n" {
			t.Fatalf("node: %q %v: a's update should be overwritten", data, err)
		}
	})
}
