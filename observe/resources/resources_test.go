package resources

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/jsonl"
)

// TestSamplerRealProcesses samples this test process and a real child
// (sleep) and writes samples whose times increase, with plausible values,
// and a data dir whose size is what was written into it.
func TestSamplerRealProcesses(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "n1", "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "snapshot.1"), make([]byte, 12345), 0o644); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	runtime.GC() // the live heap is known after a first collection
	t0 := time.Now()
	one := int64(1)
	path := filepath.Join(dir, "resources.jsonl")
	s, err := Start(context.Background(), Config{Interval: 50 * time.Millisecond, Path: path,
		Clock: func() int64 { return int64(time.Since(t0)) },
		Targets: func(context.Context) []Target {
			return []Target{{RoleWorker, 7, child.Process.Pid}, {RoleZooKeeper, 1, 1 << 30}}
		},
		Servers: func(context.Context) []Server {
			return []Server{{ID: 1, Znodes: &one}, {ID: 2, CountsError: "no answer"}}
		},
		DataDirs: func(id int) []string {
			return []string{filepath.Join(dir, "n"+string(rune('0'+id)), "data"), filepath.Join(dir, "n1", "datalog")}
		}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	last, ok := s.Last()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("Last: no sample")
	}
	got, trunc, err := ReadFile(path)
	if err != nil || trunc || len(got) < 3 {
		t.Fatalf("ReadFile: %d samples, truncated %v, err %v; want at least 3", len(got), trunc, err)
	}
	if got[len(got)-1].Seq < last.Seq {
		t.Errorf("last written seq %d before Last's %d", got[len(got)-1].Seq, last.Seq)
	}
	for i, smp := range got {
		if i > 0 && smp.TimeNS <= got[i-1].TimeNS {
			t.Errorf("sample %d at %d, not after %d", i, smp.TimeNS, got[i-1].TimeNS)
		}
		ctl, ok := smp.Controller()
		if !ok || ctl.PID != os.Getpid() || ctl.RSS < 1<<20 || ctl.RSS > 4<<30 || ctl.OpenFiles < 3 || ctl.Error != "" || ctl.HeapLive == 0 || ctl.HeapLive > ctl.RSS {
			t.Errorf("sample %d: controller %+v", i, ctl)
		}
		w := smp.Procs[1]
		if w.Role != RoleWorker || w.ID != 7 || w.RSS == 0 || w.OpenFiles < 3 || w.Error != "" {
			t.Errorf("sample %d: worker %+v", i, w)
		}
		if gone := smp.Procs[2]; gone.Error == "" || gone.RSS != 0 {
			t.Errorf("sample %d: a pid that does not exist gave %+v, want an error", i, gone)
		}
		if len(smp.Servers) != 2 || smp.Servers[0].DataBytes != 16384 || smp.Servers[1].DataBytes != 0 ||
			*smp.Servers[0].Znodes != 1 || smp.Servers[1].CountsError == "" {
			t.Errorf("sample %d: servers %+v", i, smp.Servers)
		}
	}
}

// TestReadFileCutLastLine: a sample cut off by a kill is dropped, damage
// elsewhere is an error naming the line.
func TestReadFileCutLastLine(t *testing.T) {
	ok := `{"seq":0,"time_ns":1,"procs":[]}` + "\n"
	got, trunc, err := read(strings.NewReader(ok+`{"seq":1,"ti`), "r")
	if err != nil || !trunc || len(got) != 1 {
		t.Errorf("cut last line: %d samples, truncated %v, err %v", len(got), trunc, err)
	}
	_, _, err = read(strings.NewReader(ok+"{bad\n"+ok), "r")
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("damaged middle line: err %v, want one naming line 2", err)
	}
}

// TestResumedFileAppends: a second sampler on the same path continues the
// file (a resumed soak), it does not truncate it.
func TestResumedFileAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resources.jsonl")
	for range 2 {
		w, err := jsonl.Create(path, "resources", false)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(Sample{}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := ReadFile(path)
	if err != nil || len(got) != 2 {
		t.Errorf("%d samples, err %v; want 2", len(got), err)
	}
}

func rssAt(min float64, rss uint64) Sample {
	return Sample{TimeNS: int64(min * float64(time.Minute)), Procs: []Proc{{Role: RoleController, RSS: rss}},
		Servers: []Server{{ID: 1, DataBytes: int64(min * 1000)}}}
}

func TestTrendOf(t *testing.T) {
	var flat, leak []Sample
	for m := 0.0; m <= 30; m += 0.5 {
		flat = append(flat, rssAt(m, 100))
		leak = append(leak, rssAt(m, uint64(100+10*m)))
	}
	if tr := TrendOf(flat, ControllerRSS, 5*time.Minute, time.Minute); !tr.Judged || tr.Growth != 0 {
		t.Errorf("flat: %+v", tr)
	}
	// minute 5: mean of 150 and 155; last minute: 29.5 and 30 → 397.5.
	tr := TrendOf(leak, ControllerRSS, 5*time.Minute, time.Minute)
	if !tr.Judged || tr.Growth < 1.5 || tr.Growth > 1.6 {
		t.Errorf("leak: %+v, want growth about 1.56", tr)
	}
	if tr := TrendOf(flat[:12], ControllerRSS, 5*time.Minute, time.Minute); tr.Judged || tr.Why == "" {
		t.Errorf("5.5 minutes judged: %+v", tr)
	}
	if v, ok := PerHour(flat, DataBytes); !ok || v < 59999 || v > 60001 {
		t.Errorf("data growth %v/h, %v; want 60000", v, ok)
	}
}

func TestDirSize(t *testing.T) {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "a"), []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(d, "l")); err != nil {
		t.Fatal(err)
	}
	if got := DirSize(d, filepath.Join(d, "missing")); got != 4096 {
		t.Errorf("DirSize = %d, want one 4 KiB block (a symlink and a missing dir count nothing)", got)
	}
	sparse := filepath.Join(d, "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := DirSize(d); got != 4096 {
		t.Errorf("DirSize with a 64 MB sparse file = %d, want the 4 KiB of the other file: space, not length", got)
	}
}
