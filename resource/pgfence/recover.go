package pgfence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Leftover reports whether dir (a run's PostgresDir) still holds the
// server's data directory: the run did not end with a clean export (its
// controller died), so its apply log may lack the last rows committed.
func Leftover(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION"))
	return err == nil
}

// Reexport starts a server on the data directory a killed run left in
// dir, with no network at all (a Unix socket in a private folder, trust
// for that socket only, through its own hba file: the run's password was
// kept nowhere), exports the whole audit table into a fresh apply log
// renamed over applyLog, stops the server and removes the data directory
// (removeData): the apply log now holds all of it. env tags the server
// (the run's id), so chaos cleanup finds it should this process die
// first.
func Reexport(ctx context.Context, dir, applyLog string, env []string) (int64, error) {
	if err := Preflight(); err != nil {
		return 0, err
	}
	u, err := user.Lookup(SystemUser)
	if err != nil {
		return 0, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	sock, hba, err := privateSocket(uid, gid)
	if err != nil {
		return 0, fmt.Errorf("postgres re-export: %w", err)
	}
	defer os.RemoveAll(sock)
	cfg, err := ServerConfig{Dir: dir, Env: env}.absolute()
	if err != nil {
		return 0, err
	}
	// The data directory may be a link to a folder outside the run
	// folder (prepareDir), which the server must be given itself.
	if cfg.data, err = filepath.EvalSymlinks(cfg.DataDir()); err != nil {
		return 0, fmt.Errorf("postgres re-export: %w", err)
	}
	s, err := spawn(cfg, nil, uid, gid,
		"-c", "listen_addresses=", "-c", "unix_socket_directories="+sock, "-c", "hba_file="+hba)
	if err != nil {
		return 0, err
	}
	conf, err := pgx.ParseConfig(fmt.Sprintf("host=%s user=%s dbname=%s connect_timeout=2", sock, User, Database))
	var n int64
	if err == nil {
		n, err = s.exportAll(ctx, conf, applyLog)
	}
	s.Stop(5 * time.Second)
	if err != nil {
		return 0, err
	}
	return n, removeData(cfg)
}

// privateSocket makes the folder of a server's Unix socket, the postgres
// user's, with an hba file in it that trusts that socket alone.
func privateSocket(uid, gid int) (sock, hba string, err error) {
	sock, err = reachableTemp("zkc-pg-", uid, gid)
	if err != nil {
		return "", "", err
	}
	hba = filepath.Join(sock, "hba.conf")
	err = os.WriteFile(hba, []byte("local all all trust\n"), 0o600)
	for _, p := range []string{sock, hba} {
		if err == nil {
			err = os.Chown(p, uid, gid)
		}
	}
	if err != nil {
		return "", "", errors.Join(err, os.RemoveAll(sock))
	}
	return sock, hba, nil
}

// exportAll waits for the server (crash recovery first) and writes every
// audit row to a new file renamed over applyLog.
func (s *Server) exportAll(ctx context.Context, conf *pgx.ConnConfig, applyLog string) (int64, error) {
	conn, err := s.await(ctx, conf)
	if err != nil {
		return 0, err
	}
	conn.Close(context.Background())
	tmp := applyLog + ".reexport"
	_ = os.Remove(tmp)
	x, err := NewExporter(ctx, conf, tmp)
	if err != nil {
		return 0, err
	}
	_, err = x.Poll(ctx)
	if cerr := x.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, applyLog)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return 0, errors.Join(errors.New("postgres re-export"), err)
	}
	return x.seq, nil
}
