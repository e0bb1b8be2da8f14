package progress

import (
	"testing"
	"time"
)

func TestStatusLine(t *testing.T) {
	dw := func(n int) []Count { return []Count{{Name: "double-writer", Violations: n}} }
	cases := []struct {
		st   Status
		want string
	}{
		{Status{Phase: "workload", Elapsed: 23*time.Second + 900*time.Millisecond, Limit: time.Minute, OK: 812, Fail: 3, Info: 1,
			Fault: "pause-holder", Target: 3, Online: dw(2)},
			"elapsed 23s/60s  ops ok 812 fail 3 info 1  fault pause-holder(p3)  violations 2 (double-writer)"},
		{Status{Phase: "setup", Elapsed: 4 * time.Second, Target: -1, Online: dw(0)},
			"setup 4s  ops ok 0 fail 0 info 0  fault none  violations 0 (double-writer)"},
		{Status{Phase: "workload", Elapsed: 125 * time.Second, Limit: 10 * time.Minute, Fault: "pause-zk", Target: -1},
			"elapsed 2m5s/10m  ops ok 0 fail 0 info 0  fault pause-zk"},
		{Status{Phase: "teardown", Elapsed: time.Hour, Limit: 2 * time.Hour, Target: -1, Online: []Count{{Name: "double-writer", Violations: 1, Stopped: "bad line"}}},
			"elapsed 1h/2h (teardown)  ops ok 0 fail 0 info 0  fault none  violations 1 (double-writer stopped)"},
		{Status{Prefix: "cell 3/11 curator/pause-holder/fencing-off", Phase: "workload", Elapsed: time.Second, Limit: 20 * time.Second, Target: -1,
			Online: []Count{{Name: "double-writer", Violations: 2}, {Name: "other", Violations: 0}, {Name: "third", Violations: 1}}},
			"cell 3/11 curator/pause-holder/fencing-off  elapsed 1s/20s  ops ok 0 fail 0 info 0  fault none  violations 3 (double-writer 2, third 1)"},
	}
	for _, c := range cases {
		if got := c.st.String(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 99 * time.Second: "99s", 100 * time.Second: "1m40s",
		600 * time.Second: "10m", time.Hour + 5*time.Second: "1h0m5s", 3 * time.Hour: "3h", 90 * time.Minute: "1h30m"} {
		if got := short(d); got != want {
			t.Errorf("short(%v) = %q, want %q", d, got, want)
		}
	}
}
