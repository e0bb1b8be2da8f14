package monitor

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/jsonl"
)

// The testdata answers were captured from a real 3-server ensemble
// (ZooKeeper 3.8.0, Debian's libzookeeper-java) during a chaos run with
// pause-zk-majority: a leader, a follower, the leader left without its
// quorum ("not serving"), and cons with four workers connected.
func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseMntrOfARealServer(t *testing.T) {
	one := int64(1)
	for _, c := range []struct {
		file string
		want Mntr
	}{
		{"mntr-leader.txt", Mntr{State: "leader", AvgLatency: 2.7003, MaxLatency: 56, Znodes: 15, Watches: 3,
			Ephemerals: 5, Connections: 5, Sessions: 6, PacketsReceived: 393, SyncedFollowers: &one}},
		{"mntr-follower.txt", Mntr{State: "follower", AvgLatency: 9.0833, MaxLatency: 24, Znodes: 10, Connections: 1, PacketsReceived: 15}},
	} {
		got, err := ParseMntr(readTestdata(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.file, *got, c.want)
		}
	}
	if _, err := ParseMntr(readTestdata(t, "mntr-not-serving.txt")); !errors.Is(err, cluster.ErrNotServing) {
		t.Errorf("not serving: err %v, want ErrNotServing", err)
	}
	for _, bad := range []string{"", "mntr is not executed because it is not in the whitelist.\n", "zk_server_state\tleader\nzk_znode_count\tmany\n"} {
		if m, err := ParseMntr(bad); err == nil {
			t.Errorf("ParseMntr(%q) = %+v, want an error", bad, m)
		}
	}
}

// The monitor sends only words the servers are configured to answer.
func TestWordsAreWhitelisted(t *testing.T) {
	for _, w := range Words {
		if !slices.Contains(cluster.FourLetterWords, w) {
			t.Errorf("the monitor sends %q, which cluster.FourLetterWords %v does not whitelist", w, cluster.FourLetterWords)
		}
	}
}

func TestSeqOf(t *testing.T) {
	for name, want := range map[string]int64{
		"_c_44090894-a928-4344-8e5a-8eacddeada0c-lock-0000000014": 14,
		"lock-0000000001": 1, "leader-214748": -1, "leader-2147483647": 2147483647, "lock-": -1, "x": -1, "lock-00000000a1": -1,
	} {
		if got := SeqOf(name); got != want {
			t.Errorf("SeqOf(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestNearestBeforeTakesTheLastSampleWhollyBefore(t *testing.T) {
	ss := []Sample{{TimeNS: 100, TookNS: 10}, {TimeNS: 200, TookNS: 50}, {TimeNS: 240, TookNS: 5}, {TimeNS: 300, TookNS: 1}}
	for _, c := range []struct {
		t    int64
		want int
	}{{50, -1}, {109, -1}, {110, 0}, {244, 0}, {245, 2}, {250, 1}, {299, 1}, {1000, 3}} {
		if got := NearestBefore(ss, c.t); got != c.want {
			t.Errorf("NearestBefore(%d) = %d, want %d", c.t, got, c.want)
		}
	}
	if got := NearestBefore(nil, 5); got != -1 {
		t.Errorf("no samples: %d, want -1", got)
	}
}

func TestChurnsFromCversion(t *testing.T) {
	dir := func(p string, cv, n int32) Dir { return Dir{Path: p, Cversion: cv, NumChildren: n} }
	ss := []Sample{
		{TimeNS: 1, Dirs: []Dir{dir("/a", 0, 0), {Path: "/b", Error: "ls: no node"}}},
		// /a: 3 created, 1 deleted (cversion +4, children +2).
		{TimeNS: 2, Dirs: []Dir{dir("/a", 4, 2), dir("/b", 10, 1)}},
		{TimeNS: 3, Dirs: []Dir{{Path: "/a", Error: "timeout"}, dir("/b", 12, 1)}},
		// /a: 1 more created, 3 deleted since the last read; /b re-created.
		{TimeNS: 4, Dirs: []Dir{dir("/a", 8, 0), dir("/b", 1, 1)}},
	}
	got := Churns(ss)
	want := []Churn{
		{Path: "/a", Creates: 4, Deletes: 4, FromNS: 1, ToNS: 4, Reads: 3},
		{Path: "/b", Creates: 1, Deletes: 1, FromNS: 2, ToNS: 4, Reads: 3, Resets: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Churns = %+v\nwant %+v", got, want)
	}
}

func TestFileKeepsEverySampleWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "monitor.jsonl")
	w, err := jsonl.Create(path, "monitor", true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := w.Write(Sample{Seq: i, Why: WhyInterval, Dirs: []Dir{{Path: "/a", Children: []Child{{Name: "lock-0000000001", Seq: 1, Owner: "0x1"}}}}}); err != nil {
			t.Fatal(err)
		}
		// Each sample is in the file as soon as it is written.
		f, err := ReadFile(path)
		if err != nil || len(f.Samples) != i+1 {
			t.Fatalf("after sample %d: %d samples, %v", i, len(f.Samples), err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Sample{Seq: 9}); err != nil {
		t.Errorf("write after close: %v (dropped quietly)", err)
	}
	f, err := ReadFile(path)
	if err != nil || len(f.Samples) != 3 || f.Samples[2].Dirs[0].Children[0].Owner != "0x1" {
		t.Errorf("read back %+v, %v", f, err)
	}
}

func TestReadFileDropsACutLastLineOnly(t *testing.T) {
	cut := `{"seq":0,"time_ns":1,"why":"interval","dirs":[],"servers":[]}` + "\n" + `{"seq":1,"time_`
	f, err := read(strings.NewReader(cut), "m")
	if err != nil || len(f.Samples) != 1 || !f.Truncated {
		t.Errorf("cut last line: %+v, %v; want 1 sample, truncated", f, err)
	}
	bad := `{"seq":0}` + "\n" + `not json` + "\n" + `{"seq":2}` + "\n"
	if _, err := read(strings.NewReader(bad), "m"); err == nil || !strings.Contains(err.Error(), "m line 2") {
		t.Errorf("bad middle line: err %v, want one naming line 2", err)
	}
}

// A nemesis step is the completion of a fault's start or stop, or of the
// final restore; it asks for a sample without ever blocking.
func TestStepRecorderAsksForASampleAtEachStep(t *testing.T) {
	m := &Monitor{steps: make(chan step, 2)}
	r := StepRecorder{Recorder: &history.Memory{}, M: m}
	pause := &history.Value{Target: "n2"}
	for _, e := range []history.Event{
		{Process: history.Nemesis, Type: history.Invoke, F: history.FPause, Value: pause},
		{Process: history.Nemesis, Type: history.OK, F: history.FPause, Value: pause},
		{Process: history.Nemesis, Type: history.OK, F: history.FSessionGone},
		{Process: 3, Type: history.OK, F: history.FAcquire},
		{Process: history.Nemesis, Type: history.Info, F: history.FResume, Value: pause},
		{Process: history.Nemesis, Type: history.OK, F: history.FRestore},
	} {
		if _, err := r.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	var got []step
	for len(m.steps) > 0 {
		got = append(got, <-m.steps)
	}
	want := []step{{"pause ok n2", 1}, {"resume info n2", 4}}
	if !reflect.DeepEqual(got, want) || m.dropped.Load() != 1 {
		t.Errorf("steps %v, dropped %d; want %v and the restore dropped (queue of 2 full)", got, m.dropped.Load(), want)
	}
	var nilM *Monitor
	nilM.Step("x", 1) // a run without a monitor
}
