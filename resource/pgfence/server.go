package pgfence

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/internal/logcap"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// BinDirEnv overrides DefaultBinDir, the directory of initdb and postgres.
const BinDirEnv = "ZKCHAOS_PG_BIN"

// DefaultBinDir is where Debian's postgresql-15 puts its server binaries.
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

// SystemUser runs initdb and the server: PostgreSQL refuses to run as
// root, and the data directory must belong to the server's user.
const SystemUser = "postgres"

// Port is the server's port in its namespace.
const Port = 5432

// setpriv switches to SystemUser and then execs the program itself, so
// the PID the harness holds is the server's (util-linux, on every Debian).
const setpriv = "/usr/bin/setpriv"

// BinDir is the directory initdb and postgres are taken from.
func BinDir() string {
	if d := os.Getenv(BinDirEnv); d != "" {
		return d
	}
	return DefaultBinDir
}

// Preflight checks, before anything of a run is made, that this machine
// can run the resource: the binaries, the system user and setpriv, and
// root (to switch to that user).
func Preflight() error {
	dir := BinDir()
	for _, b := range []string{"initdb", "postgres"} {
		p := filepath.Join(dir, b)
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("PostgreSQL server binary %s missing or not executable (install Debian's postgresql-15, scripts/install-deps.sh, or set %s)", p, BinDirEnv)
		}
	}
	u, err := user.Lookup(SystemUser)
	if err != nil {
		return fmt.Errorf("no %q system user to run PostgreSQL as (install Debian's postgresql-15): %w", SystemUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := reachable(dir, uid, gid); err != nil {
		return fmt.Errorf("%w: initdb and postgres run as that user (set %s to a folder it can search)", err, BinDirEnv)
	}
	if _, err := os.Stat(setpriv); err != nil {
		return fmt.Errorf("%s missing (util-linux): it starts PostgreSQL as the %s user", setpriv, SystemUser)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root: initdb and the server run as the %s user in the run's namespace", SystemUser)
	}
	return nil
}

// ServerConfig is one server of one run.
type ServerConfig struct {
	// Dir is the server's folder in the run folder: data/ (the data
	// directory, the postgres user's) and postgres.log.
	Dir string
	// Host is the server's namespace; it listens on Host.IP only.
	Host *netns.Host
	// Env is added to the environment of initdb and the server (the
	// run's process tag).
	Env []string
	// Password is the password of User (the run's secret).
	Password string
	// Mode is the run's fencing mode, written into the schema.
	Mode string
	// data is where the data directory really is: DataDir, or the
	// folder DataDir links to (prepareDir).
	data string
}

// Server is a running postgres.
type Server struct {
	cfg    ServerConfig
	cmd    *exec.Cmd
	stderr *logcap.Tail
	done   chan struct{}
	err    error
	// DSN is what workers connect to, without the password.
	DSN string
}

// LogFile is the server's log in ServerConfig.Dir.
const LogFile = "postgres.log"

// DataDir is the data directory in ServerConfig.Dir: the directory
// itself, or a link to it where the postgres user cannot reach Dir.
func (c ServerConfig) DataDir() string { return filepath.Join(c.Dir, "data") }

// dataDir is where the data directory really is, for the programs that
// run as the postgres user (a link they cannot reach would not do).
func (c ServerConfig) dataDir() string {
	if c.data != "" {
		return c.data
	}
	return c.DataDir()
}

// absolute is cfg with Dir made absolute: initdb and the server run in
// "/" (asUser), so a relative run folder (`--results results`) would name
// files they cannot find.
func (c ServerConfig) absolute() (ServerConfig, error) {
	d, err := filepath.Abs(c.Dir)
	if err != nil {
		return c, fmt.Errorf("postgres folder %s: %w", c.Dir, err)
	}
	c.Dir = d
	return c, nil
}

// Start runs initdb, starts the server in cfg.Host's namespace, waits
// until it answers, and creates the schema. On error nothing it started
// is left running, and no data directory is left (a server that never
// answered holds nothing of the run).
func Start(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Host == nil {
		return nil, fmt.Errorf("postgres: needs the run's network namespaces (%s netns)", setting.Name("Net"))
	}
	cfg, err := cfg.absolute()
	if err != nil {
		return nil, err
	}
	u, err := user.Lookup(SystemUser)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if cfg.data, err = prepareDir(cfg, uid, gid); err != nil {
		return nil, err
	}
	s, err := initAndLaunch(ctx, cfg, uid, gid)
	if err != nil {
		return nil, errors.Join(err, removeData(cfg))
	}
	return s, nil
}

// initAndLaunch makes the cluster in cfg's data directory and runs the
// server until it answers with the schema in place.
func initAndLaunch(ctx context.Context, cfg ServerConfig, uid, gid int) (*Server, error) {
	if err := initdb(ctx, cfg, uid, gid); err != nil {
		return nil, err
	}
	s, err := launch(cfg, uid, gid)
	if err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		s.Stop(time.Second)
		return nil, err
	}
	return s, nil
}

// prepareDir makes Dir and the data directory (the postgres user's, mode
// 0700 as initdb wants) and returns the data directory's path. Where the
// postgres user cannot reach Dir (a results folder under a private home,
// mode 0700), the data directory goes into a folder of its own under
// tempBases, and DataDir links to it (linkOutside): the run folder keeps
// its layout, and chaos check finds the data a killed run left.
func prepareDir(cfg ServerConfig, uid, gid int) (string, error) {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return "", fmt.Errorf("postgres folder: %w", err)
	}
	data, undo := cfg.DataDir(), func() error { return nil }
	if unreachable := reachable(cfg.Dir, uid, gid); unreachable != nil {
		var err error
		if data, undo, err = linkOutside(cfg, uid, gid); err != nil {
			return "", fmt.Errorf("postgres: %w, nor a folder for the data directory elsewhere (%w); use a %s folder it can search",
				unreachable, err, setting.Name("ResultsDir"))
		}
	}
	err := os.Mkdir(data, 0o700)
	if err == nil {
		err = os.Chown(data, uid, gid)
	}
	if err != nil {
		return "", errors.Join(fmt.Errorf("postgres data directory: %w", err), undo())
	}
	return data, nil
}

// linkOutside makes a folder for the data directory outside the run
// folder (outsideHome) and links DataDir to the data directory's place in
// it; undo removes the link and the folder.
func linkOutside(cfg ServerConfig, uid, gid int) (data string, undo func() error, err error) {
	home, err := outsideHome(uid, gid)
	if err != nil {
		return "", nil, err
	}
	data = filepath.Join(home, "data")
	if err := os.Symlink(data, cfg.DataDir()); err != nil {
		return "", nil, errors.Join(fmt.Errorf("postgres data directory: %w", err), os.RemoveAll(home))
	}
	return data, func() error { return errors.Join(os.Remove(cfg.DataDir()), os.RemoveAll(home)) }, nil
}

// tempBases are where the folders go that the postgres user must reach
// outside the run folder: /var/tmp first, which outlives a reboot as the
// run folder does (chaos check re-exports a killed run's data).
var tempBases = []string{"/var/tmp", os.TempDir()}

// outsideHome makes the folder of a data directory that cannot be in the
// run folder: the harness's (root's), searchable but not listable by
// others, so the data directory in it (the postgres user's, 0700) is
// reachable and nothing else is shown.
func outsideHome(uid, gid int) (string, error) {
	home, err := reachableTemp("zkchaos-pg-", uid, gid)
	if err == nil {
		err = os.Chmod(home, 0o711)
	}
	if err != nil {
		return "", fmt.Errorf("postgres data directory: %w", err)
	}
	return home, nil
}

// reachableTemp makes a new folder (os.MkdirTemp) under the first of
// tempBases the postgres user (uid/gid) can reach.
func reachableTemp(prefix string, uid, gid int) (string, error) {
	var errs []error
	for _, base := range tempBases {
		if err := reachable(base, uid, gid); err != nil {
			errs = append(errs, err)
			continue
		}
		return os.MkdirTemp(base, prefix)
	}
	return "", errors.Join(errs...)
}

// reachable checks that uid/gid may search every folder down to dir: a
// results folder under a private home (0700) would make initdb fail with
// a message about permissions three steps away from the cause.
func reachable(dir string, uid, gid int) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("postgres folder: %w", err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("postgres folder: %w", err)
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		perm := st.Mode().Perm()
		var can bool
		switch {
		case !ok:
			can = true
		case int(sys.Uid) == uid:
			can = perm&0o100 != 0
		case int(sys.Gid) == gid:
			can = perm&0o010 != 0
		default:
			can = perm&0o001 != 0
		}
		if !can {
			return fmt.Errorf("the %s user cannot reach %s: %s is mode %v", SystemUser, dir, d, st.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

// asUser is the command that runs prog as the postgres user, with the
// run's tag, in its own process group.
func asUser(cfg ServerConfig, host *netns.Host, uid, gid int, prog string, args ...string) *exec.Cmd {
	full := append([]string{"--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(gid), "--init-groups", "--", prog}, args...)
	var cmd *exec.Cmd
	if host != nil {
		cmd = host.Command(context.Background(), setpriv, full...)
	} else {
		cmd = exec.Command(setpriv, full...)
	}
	cmd.Env = append(append(os.Environ(), "LC_ALL=C"), cfg.Env...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// initdb makes the cluster: User is its superuser with cfg.Password
// (scram over TCP); on the Unix socket only the postgres user itself, by
// peer. Its output goes to the server's log.
func initdb(ctx context.Context, cfg ServerConfig, uid, gid int) error {
	// Beside the data directory: a folder the postgres user can reach.
	pw := filepath.Join(filepath.Dir(cfg.dataDir()), "initdb.pw")
	if err := os.WriteFile(pw, []byte(cfg.Password+"\n"), 0o600); err != nil {
		return fmt.Errorf("postgres initdb: %w", err)
	}
	defer os.Remove(pw)
	if err := os.Chown(pw, uid, gid); err != nil {
		return fmt.Errorf("postgres initdb: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(cfg.Dir, LogFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("postgres log: %w", err)
	}
	defer logf.Close()
	tail := logcap.NewTail(logf, 3)
	cmd := asUser(cfg, nil, uid, gid, filepath.Join(BinDir(), "initdb"), "-D", cfg.dataDir(), "-U", User,
		"--pwfile", pw, "--auth-host", "scram-sha-256", "--auth-local", "peer", "-E", "UTF8", "--locale", "C", "--no-sync")
	cmd.Stdout, cmd.Stderr = tail, tail
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("postgres initdb: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("postgres initdb: %w", ctx.Err())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("postgres initdb: still running after 60s")
	}
	if err != nil {
		return fmt.Errorf("postgres initdb: %w: %s", err, tail.Last())
	}
	hba := "local all " + SystemUser + " peer\nhost all " + User + " 0.0.0.0/0 scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(cfg.dataDir(), "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return fmt.Errorf("postgres pg_hba.conf: %w", err)
	}
	return nil
}

// launch starts the server in its namespace, listening on its address
// only, its log appended to LogFile.
func launch(cfg ServerConfig, uid, gid int) (*Server, error) {
	s, err := spawn(cfg, cfg.Host, uid, gid,
		"-c", "listen_addresses="+cfg.Host.IP, "-c", "port="+strconv.Itoa(Port),
		// No Unix socket: nothing here uses one, and its path (in the run
		// folder) can pass the kernel's 107 bytes under test-all.
		"-c", "unix_socket_directories=",
		"-c", "max_connections=300", "-c", "shared_buffers=32MB",
		// A client that gave up (its attempt timed out behind a row lock
		// held by a paused worker) is noticed within a second, and its
		// transaction rolled back, instead of when its turn comes.
		"-c", "client_connection_check_interval=1s")
	if err != nil {
		return nil, err
	}
	s.DSN = fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", User, net.JoinHostPort(cfg.Host.IP, strconv.Itoa(Port)), Database)
	return s, nil
}

// spawn starts postgres on cfg's data directory as uid/gid (in host's
// namespace, or none), with settings, its output appended to LogFile.
func spawn(cfg ServerConfig, host *netns.Host, uid, gid int, settings ...string) (*Server, error) {
	logf, err := os.OpenFile(filepath.Join(cfg.Dir, LogFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("postgres log: %w", err)
	}
	args := append([]string{"-D", cfg.dataDir(), "-c", "logging_collector=off"}, settings...)
	cmd := asUser(cfg, host, uid, gid, filepath.Join(BinDir(), "postgres"), args...)
	s := &Server{cfg: cfg, cmd: cmd, stderr: logcap.NewTail(logf, 5), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stderr, s.stderr
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	go func() {
		s.err = cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	return s, nil
}

// readyTimeout bounds the server's start: a fresh cluster answers within
// a second or two here.
const readyTimeout = 30 * time.Second

// ready waits until the server takes a connection, then creates the
// schema. A server that exits first is an error with its last words.
func (s *Server) ready(ctx context.Context) error {
	cfg, err := s.ConnConfig(2 * time.Second)
	if err != nil {
		return err
	}
	conn, err := s.await(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return InitSchema(ctx, conn, s.cfg.Mode)
}

// await connects with cfg once the server takes connections (within
// readyTimeout); a server that exits first is an error with its last
// words.
func (s *Server) await(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-s.done:
			return nil, s.ExitError()
		default:
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			return conn, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("postgres did not take a connection within %s (see %s): %w", readyTimeout, filepath.Join(s.cfg.Dir, LogFile), err)
		}
		select {
		case <-s.done:
			return nil, s.ExitError()
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ConnConfig is the harness's connection to the server.
func (s *Server) ConnConfig(timeout time.Duration) (*pgx.ConnConfig, error) {
	return ConnConfig(s.DSN, s.cfg.Password, timeout)
}

// Done is closed when the server has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// PID is the postmaster's.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// ExitError says that the server exited, with its last words (valid
// after Done).
func (s *Server) ExitError() error {
	why := "exit status 0"
	if s.err != nil {
		why = s.err.Error()
	}
	return fmt.Errorf("postgres exited (%s): %s", why, lastWords(s.stderr))
}

// lastWords is the server's FATAL line when it logged one (it is followed
// by "database system is shut down", which says nothing), else its last
// line.
func lastWords(t *logcap.Tail) string {
	lines := strings.Split(t.String(), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "FATAL:") {
			return strings.TrimSpace(lines[i])
		}
	}
	return t.Last()
}

// Stop shuts the server down fast (SIGINT: sessions are ended, the
// postmaster waits for its children), and kills it after grace. Children
// left by a killed postmaster are in its namespace, which the run's
// network removal kills.
func (s *Server) Stop(grace time.Duration) {
	if s == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(grace):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// RemoveData removes the data directory (the apply log holds what the
// run needs; the data directory is about 40 MB).
func (s *Server) RemoveData() error { return removeData(s.cfg) }

// removeData removes cfg's data directory, and the folder of its own it
// had outside the run folder, with the link to it.
func removeData(cfg ServerConfig) error {
	var errs []error
	if data := cfg.dataDir(); data != cfg.DataDir() {
		errs = append(errs, os.RemoveAll(filepath.Dir(data)))
	}
	if err := os.RemoveAll(cfg.DataDir()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("postgres: remove the data directory: %w", err)
	}
	return nil
}
