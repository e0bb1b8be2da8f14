package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/setting"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []int64
		want int64
	}{{nil, 0}, {[]int64{5}, 5}, {[]int64{3, 1, 2}, 2}, {[]int64{4, 1, 3, 2}, 2}, {[]int64{10, 20}, 15}} {
		orig := append([]int64(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %d, want %d", c.in, got, c.want)
		}
		if !equal(orig, c.in) {
			t.Errorf("Median changed its input: %v, was %v", c.in, orig)
		}
	}
}

// The nearest-rank quantile: the smallest sample that at least q of the
// samples do not exceed.
func TestQuantile(t *testing.T) {
	fifty := make([]int64, 50)
	for i := range fifty {
		fifty[i] = int64(50 - i) // 50..1, unsorted
	}
	for _, c := range []struct {
		in   []int64
		q    float64
		want int64
	}{{nil, 0.95, 0}, {[]int64{7}, 0.95, 7}, {fifty, 0.95, 48}, {fifty, 0.5, 25}, {fifty, 1, 50}, {fifty, 0, 1}, {[]int64{1, 2, 3, 100}, 0.95, 100}} {
		orig := append([]int64(nil), c.in...)
		if got := Quantile(c.in, c.q); got != c.want {
			t.Errorf("Quantile(%v, %v) = %d, want %d", c.in, c.q, got, c.want)
		}
		if !equal(orig, c.in) {
			t.Errorf("Quantile changed its input")
		}
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRate(t *testing.T) {
	f := Figure{Ops: 300}
	f.rate(1500 * time.Millisecond)
	if f.PerSec != 200 || f.Seconds != 1.5 {
		t.Fatalf("rate: %v/s over %vs, want 200/s over 1.5s", f.PerSec, f.Seconds)
	}
	var z Figure
	z.rate(0)
	if z.PerSec != 0 {
		t.Fatalf("an empty window gives %v/s", z.PerSec)
	}
}

// The overhead is paired: a drift that slows both of a pair cancels.
func TestOverheadPaired(t *testing.T) {
	o := Overhead{DirectRawNS: []int64{1000, 2000, 1000, 3000, 1000}, WorkerRawNS: []int64{1050, 2050, 1050, 3050, 1050}}
	o.settle()
	if o.Samples != 5 || o.DirectNS != 1000 || o.WorkerNS != 1050 {
		t.Fatalf("settle: %+v", o)
	}
	if math.Abs(o.Fraction-0.05) > 1e-9 {
		t.Fatalf("fraction %v, want 0.05 (a 50ns median difference over a 1000ns median)", o.Fraction)
	}
}

func fig(subject, kind, layout string, perSec float64) Figure {
	return Figure{Subject: subject, Kind: kind, Layout: layout, PerSec: perSec}
}

func TestSettleTargets(t *testing.T) {
	r := &Result{Figures: []Figure{
		fig(SubjectRaw, KindPairs, Hot, 1000), fig(SubjectRaw, KindPairs, Spread, 2000),
		fig(Seed, KindLock, Hot, 500), fig(Seed, KindLock, Spread, 1900),
		fig(ZKLock, KindLock, Hot, 400), fig(ZKLock, KindLock, Spread, 1000),
		fig(Seed, KindSection, Spread, 300), fig(ZKLock, KindSection, Spread, 600),
	}, Overhead: &Overhead{DirectNS: 1000, Fraction: 0.07},
		// Judged on the direct start only: the namespace's adds ip's.
		Hello: []Hello{{Way: HelloDirect, Starts: 50, MedianNS: 20_500_000}, {Way: HelloNamespace, Starts: 50, MedianNS: 5_000_000}}}
	r.Settle()
	want := map[string]struct {
		v    float64
		met  bool
		know bool
	}{
		"seed lock >= 0.9x raw pairs, 8 keys":         {0.95, true, true},
		"seed lock >= 1.0x zk-lock, one hot lock":     {1.25, true, true},
		"harness overhead < 5% of an acquisition":     {0.07, false, true},
		"worker exec to hello, median ms (50 starts)": {20.5, false, true},
	}
	if len(r.Targets) != len(want) {
		t.Fatalf("targets %+v, want %d", r.Targets, len(want))
	}
	for _, tg := range r.Targets {
		w, ok := want[tg.Name]
		if !ok || math.Abs(tg.Value-w.v) > 1e-9 || tg.Met != w.met || tg.Known != w.know {
			t.Errorf("target %+v, want %+v", tg, w)
		}
	}
	ratio := func(name string) float64 {
		for _, rt := range r.Ratios {
			if rt.Name == name {
				return rt.Value
			}
		}
		t.Fatalf("no ratio %q in %+v", name, r.Ratios)
		return 0
	}
	if got := ratio("seed/section/8-keys / zk-lock/section/8-keys"); got != 0.5 {
		t.Errorf("section ratio %v, want 0.5", got)
	}
	if got := ratio("zk-lock/lock/hot / raw/pairs/hot"); got != 0.4 {
		t.Errorf("zk-lock over raw %v, want 0.4", got)
	}
	for _, rt := range r.Ratios {
		if rt.Of == rt.Over {
			t.Errorf("a figure over itself: %+v", rt)
		}
	}
}

// A target whose figures were not measured is unknown, never met.
func TestTargetUnknown(t *testing.T) {
	r := &Result{Figures: []Figure{fig(SubjectRaw, KindPairs, Spread, 2000), fig(ZKLock, KindLock, Hot, 0)}}
	r.Settle()
	for _, tg := range r.Targets {
		if tg.Known || tg.Met || tg.Verdict() != "unknown" {
			t.Errorf("target %+v: want unknown", tg)
		}
	}
}

func TestWriteAndPrint(t *testing.T) {
	r := &Result{RunID: "abc", Clients: 8, Nodes: 3, Figures: []Figure{
		{Subject: SubjectRaw, Kind: KindPairs, Layout: Spread, PerSec: 2000, Includes: Includes(KindPairs), CPUPerOp: map[string]float64{RoleServers: 0.5}},
		{Subject: Seed, Kind: KindLock, Layout: Spread, PerSec: 1500, Includes: Includes(KindLock)},
	}, Hello: []Hello{{Recipe: Seed, Way: HelloDirect, Includes: "exec to hello", RawNS: []int64{9_000_000, 7_000_000, 30_000_000, 8_000_000}}}}
	r.Hello[0].settle()
	r.Settle()
	path := filepath.Join(t.TempDir(), File)
	if err := r.Write(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Figures) != 2 || back.Figures[0].CPUPerOp[RoleServers] != 0.5 || len(back.Targets) != 4 || len(back.Hello) != 1 || back.Hello[0].P95NS != 30_000_000 {
		t.Fatalf("bench.json round trip: %+v", back)
	}
	var out bytes.Buffer
	r.Print(&out)
	for _, want := range []string{"seed/lock/8-keys", "NOT MET", "UNKNOWN", "0.750", Includes(KindLock), "zookeeper 0.50",
		"worker start (seed, direct): exec to hello median 8.5ms, p95 30.0ms over 4 starts", "worker exec to hello, median ms (4 starts)", "got 8.500  MET"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestKeyOf(t *testing.T) {
	if keyOf("seed", Hot, 5) != "seed-hot" || keyOf("seed", Spread, 9) != "seed-k1" {
		t.Fatal(keyOf("seed", Hot, 5), keyOf("seed", Spread, 9))
	}
	keys := map[string]bool{}
	for i := range 16 {
		keys[keyOf("x", Spread, i)] = true
	}
	if len(keys) != SpreadKeys {
		t.Fatalf("%d keys on the spread layout, want %d", len(keys), SpreadKeys)
	}
}

func TestPerOp(t *testing.T) {
	got := perOp(cpuTimes{RoleServers: 1, RoleWorkers: 2}, cpuTimes{RoleServers: 3, RoleWorkers: 2.5, RoleMachine: 9}, 1000)
	if got[RoleServers] != 2 || got[RoleWorkers] != 0.5 || got[RoleMachine] != 9 {
		t.Fatalf("perOp: %v", got)
	}
	if perOp(cpuTimes{}, cpuTimes{RoleServers: 1}, 0) != nil {
		t.Fatal("perOp of no operation must be nil")
	}
}

func TestValidate(t *testing.T) {
	base := Defaults()
	base.ResultsDir = t.TempDir()
	if err := base.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for field, change := range map[string]func(*Config){
		"Clients":  func(c *Config) { c.Clients = 0 },
		"Window":   func(c *Config) { c.Window = 0 },
		"Subjects": func(c *Config) { c.Subjects = []string{"nope"} },
		"Net":      func(c *Config) { c.Net = "wifi" },
		"Cluster":  func(c *Config) { c.Cluster = "cloud" },
		"Name":     func(c *Config) { c.Name = "../x" },
	} {
		c := base
		change(&c)
		err := c.Validate()
		var fe setting.FieldError
		if !errors.As(err, &fe) || fe.Field != field || !strings.HasPrefix(err.Error(), setting.Name(field)) {
			t.Errorf("%s: error %v, want one naming the setting first", field, err)
		}
	}
}

func TestOverheadRecipe(t *testing.T) {
	for _, c := range []struct {
		subs []string
		want string
	}{{[]string{Curator, ZKLock, Seed}, Seed}, {[]string{Curator, ZKLock}, ZKLock}, {[]string{Curator}, ""}, {[]string{"kazoo", Curator, ZKLock}, ZKLock}, {[]string{"kazoo"}, ""}} {
		if got := overheadRecipe(c.subs); got != c.want {
			t.Errorf("overheadRecipe(%v) = %q, want %q", c.subs, got, c.want)
		}
	}
}

func TestRequestsPerOp(t *testing.T) {
	a, b := costSample{requests: 100}, costSample{requests: 500}
	if got := requestsPerOp(a, b, 100); got != 4 {
		t.Fatalf("requestsPerOp = %v, want 4", got)
	}
	if requestsPerOp(costSample{requests: -1}, b, 100) != 0 || requestsPerOp(a, b, 0) != 0 {
		t.Fatal("an unknown count or no operation must give 0")
	}
}
