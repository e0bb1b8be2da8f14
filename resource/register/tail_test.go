package register

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFollowWhileAppended: a writer goroutine creates the log late and
// appends lines in random pieces (a line split across writes, several
// lines in one write) while Follow reads: every entry comes through once,
// in order, and none before its newline was written.
func TestFollowWhileAppended(t *testing.T) {
	path := filepath.Join(t.TempDir(), "register.jsonl")
	const n = 400
	var mu sync.Mutex
	written := 0 // lines whose newline is in the file
	var got []int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, path, 2*time.Millisecond, func(e *Entry) {
			mu.Lock()
			defer mu.Unlock()
			if int(e.Seq) > written {
				t.Errorf("entry seq %d handed on before its newline was written (%d lines complete)", e.Seq, written)
			}
			got = append(got, e.Seq)
		})
	}()
	time.Sleep(20 * time.Millisecond) // Follow waits for the file
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all strings.Builder
	for i := int64(1); i <= n; i++ {
		all.WriteString(line(i) + "\n")
	}
	data := all.String()
	r := rand.New(rand.NewPCG(3, 5))
	for pos := 0; pos < len(data); {
		end := min(len(data), pos+1+r.IntN(400))
		mu.Lock()
		if _, err := f.WriteString(data[pos:end]); err != nil {
			t.Fatal(err)
		}
		written = strings.Count(data[:end], "\n")
		mu.Unlock()
		pos = end
		if r.IntN(4) == 0 {
			time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
		}
	}
	// The lines come through while the file grows, not only at the end.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k == n || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("got %d entries, want %d", len(got), n)
	}
	for i, s := range got {
		if s != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, s)
		}
	}
}

// TestFollowTornAndBad: a torn last line is held back (and dropped at the
// end), a whole line without its newline counts at the end, a bad
// complete line is an error naming it, and a file that shrinks is an
// error.
func TestFollowTornAndBad(t *testing.T) {
	follow := func(content string) ([]int64, error) {
		path := filepath.Join(t.TempDir(), "register.jsonl")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var seqs []int64
		err := Follow(ctx, path, time.Millisecond, func(e *Entry) { seqs = append(seqs, e.Seq) })
		return seqs, err
	}
	good := line(1) + "\n" + line(2) + "\n"
	if seqs, err := follow(good + `{"seq":3,"wall":1,"op":"wr`); err != nil || len(seqs) != 2 {
		t.Errorf("torn last line: %v %v", seqs, err)
	}
	if seqs, err := follow(good + line(3)); err != nil || len(seqs) != 3 {
		t.Errorf("whole last line without newline: %v %v", seqs, err)
	}
	if _, err := follow(good + "xyz\n" + line(3) + "\n"); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad middle line: %v", err)
	}

	path := filepath.Join(t.TempDir(), "register.jsonl")
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first := make(chan struct{}, 2)
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, path, time.Millisecond, func(*Entry) { first <- struct{}{} }) }()
	<-first
	<-first
	if err := os.Truncate(path, 10); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "shrank") {
		t.Errorf("shrunk file: %v", err)
	}
}

// TestFollowNoFile: ctx ending before the file appears is no error.
func TestFollowNoFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := Follow(ctx, filepath.Join(t.TempDir(), "never"), time.Millisecond, func(*Entry) { t.Error("an entry from nowhere") }); err != nil {
		t.Error(err)
	}
}
