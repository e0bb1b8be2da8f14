package pgfence

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/resource/register"
)

// shared is the package's one real server (a start is initdb plus a
// server: seconds on a busy machine), in a namespace of its own slot,
// stopped with everything of it by TestMain. Each test resets its tables
// and sets the fencing mode it needs (testServer).
var shared struct {
	once sync.Once
	s    *Server
	err  error
	run  string
	stop func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.stop != nil {
		shared.stop()
	}
	os.Exit(code)
}

// startShared starts the shared server.
func startShared() {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	shared.run = "pgt" + uuid.NewString()[:5]
	n, err := netns.Create(ctx, shared.run, proc.Self(), nil)
	if err != nil {
		shared.err = err
		return
	}
	// Not t.TempDir: its parent is private (0700), and the postgres user
	// could not reach a data directory under it.
	dir, err := os.MkdirTemp("", "pgfence-test-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	var s *Server
	if err == nil {
		var h *netns.Host
		if h, err = n.AddHost(ctx, "pg"); err == nil {
			// A relative folder, as `chaos run --results results` gives
			// (from the folder's parent: a path up to / would still
			// resolve from initdb's "/"). No test of this package runs in
			// parallel, so the working directory may move for the start.
			var back func()
			if back, err = chdir(dir); err != nil {
				shared.err = err
				return
			}
			s, err = Start(ctx, ServerConfig{Dir: "pg", Host: h, Env: proc.Env(shared.run, proc.Self()),
				Password: "secret-" + shared.run, Mode: register.ModeOn})
			back()
		}
	}
	shared.s, shared.err = s, err
	shared.stop = func() {
		s.Stop(5 * time.Second)
		_ = n.Close(context.Background())
		os.RemoveAll(dir)
	}
}

// chdir moves the working directory to dir; back moves it back.
func chdir(dir string) (back func(), err error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if err := os.Chdir(dir); err != nil {
		return nil, err
	}
	return func() { _ = os.Chdir(wd) }, nil
}

// testServer is the shared server with empty tables and the fencing mode.
func testServer(t *testing.T, mode string) *Server {
	t.Helper()
	if err := Preflight(); err != nil {
		t.Skip(err)
	}
	if err := netns.Available(); err != nil {
		t.Skip(err)
	}
	shared.once.Do(startShared)
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	ctx := context.Background()
	cfg, err := shared.s.ConnConfig(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `TRUNCATE audit, resource; UPDATE settings SET mode = '`+mode+`'`); err != nil {
		t.Fatal(err)
	}
	return shared.s
}

func testClient(t *testing.T, s *Server) *Client {
	t.Helper()
	c, err := NewClient(s.DSN, s.cfg.Password, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func tok(n int64) *int64 { return &n }

// TestFencedWritesAndExport: the conditional UPDATE accepts a
// higher token and refuses a lower one, a fenced read moves the fence,
// and the exported log replays as a register's does.
func TestFencedWritesAndExport(t *testing.T) {
	s := testServer(t, register.ModeStrict)
	c := testClient(t, s)
	ctx := context.Background()
	steps := []struct {
		op    string
		tok   int64
		value int64
		want  bool
	}{
		{register.OpWrite, 10, 1, true},
		{register.OpWrite, 10, 2, false}, // strict: one write per grant
		{register.OpRead, 12, 0, true},   // the next holder's read raises the fence
		{register.OpWrite, 11, 3, false}, // a stale holder after that read
		{register.OpWrite, 12, 4, true},
		{register.OpRead, 9, 0, false},
	}
	for i, st := range steps {
		var rep register.Reply
		var err error
		if st.op == register.OpWrite {
			rep, err = c.Write(ctx, register.WriteRequest{Key: "k", Value: st.value, Token: tok(st.tok), Process: i})
		} else {
			rep, err = c.Read(ctx, register.ReadRequest{Key: "k", Token: tok(st.tok), Process: i})
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if rep.Accepted != st.want {
			t.Fatalf("step %d %s token %d: accepted %v, want %v (%+v)", i, st.op, st.tok, rep.Accepted, st.want, rep)
		}
	}
	entries := export(t, s)
	if len(entries) != len(steps) {
		t.Fatalf("exported %d entries, want %d", len(entries), len(steps))
	}
	tables, err := register.ReplayAll(entries)
	if err != nil {
		t.Fatalf("the exported log does not replay: %v", err)
	}
	if got := tables.Keys["k"]; got.Value != 4 || got.Token != 12 || got.Fence != 12 {
		t.Fatalf("replayed state %+v, want value 4 token 12 fence 12", got)
	}
}

// newExporter is an exporter of s's audit table into a fresh apply log,
// and the log's path.
func newExporter(t *testing.T, s *Server) (*Exporter, string) {
	t.Helper()
	cfg, err := s.ConnConfig(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "register.jsonl")
	x, err := NewExporter(context.Background(), cfg, path)
	if err != nil {
		t.Fatal(err)
	}
	return x, path
}

// export writes the audit table to a fresh apply log and reads it back.
func export(t *testing.T, s *Server) []register.Entry {
	t.Helper()
	ctx := context.Background()
	x, path := newExporter(t, s)
	if _, err := x.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := register.ReadApplyLog(path)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestServerTagged: the server carries the run's tag, so the janitor and
// chaos cleanup find it; it runs as the postgres user, in its namespace.
func TestServerTagged(t *testing.T) {
	s := testServer(t, register.ModeOn)
	tagged, err := proc.FindTagged(shared.run)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range tagged {
		found = found || p.PID == s.PID()
	}
	if !found {
		t.Fatalf("postmaster %d not among the run's tagged processes %v", s.PID(), tagged)
	}
	st, err := os.Stat(fmt.Sprintf("/proc/%d", s.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid == 0 {
		t.Fatalf("postmaster runs as root")
	}
	t.Logf("tagged processes: %d", len(tagged))
}

// TestFollowOutlastsAStalledServer: a server that answers no poll for a
// while (its processes stopped, as a loaded machine stalls them) costs
// the export time, not the run: the polls that time out are tried again
// and the log ends whole. With the bounds shortened, a stall of four
// poll bounds shows it in seconds.
func TestFollowOutlastsAStalledServer(t *testing.T) {
	s := testServer(t, register.ModeStrict)
	c := testClient(t, s)
	defer func(p, l time.Duration) { pollTimeout, stallLimit = p, l }(pollTimeout, stallLimit)
	pollTimeout, stallLimit = 500*time.Millisecond, 20*time.Second
	ctx := context.Background()
	write := func(v int64) {
		t.Helper()
		if _, err := c.Write(ctx, register.WriteRequest{Key: "k", Value: v, Token: tok(10 + v), Process: 1}); err != nil {
			t.Fatal(err)
		}
	}
	x, path := newExporter(t, s)
	defer x.Close()
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- x.Follow(fctx, 50*time.Millisecond) }()
	write(1)
	// Postgres puts each of its processes in a session of its own: the
	// postmaster and every child of it are stopped one by one.
	procs := append(childrenOf(t, s.PID()), s.PID())
	for _, p := range procs {
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(4 * pollTimeout)
	for _, p := range procs {
		if err := syscall.Kill(p, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	write(2)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("the export failed over a stall of %s: %v", 4*pollTimeout, err)
	}
	entries, err := register.ReadApplyLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("exported %d entries, want 2: %+v", len(entries), entries)
	}
}

// childrenOf are the PIDs whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	kids, err := proc.Children(pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) == 0 {
		t.Fatalf("no child of postgres %d", pid)
	}
	return kids
}
