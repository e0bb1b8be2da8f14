// Package serve is chaos serve: the results folder in a browser. An index
// of the runs, newest first and filterable without JavaScript (a GET
// form, the filters in the query string), the test-all and compare pages
// found there, a form that compares two runs on the fly, and every file of
// the folder, read-only.
//
// Everything is read through an os.Root opened on the results folder, so a
// path with "..", or a symlink inside the folder that points outside it,
// is refused by the kernel-backed root rather than by string checks of
// our own; and the listener is on loopback unless the caller says
// otherwise (see CheckAddr): the results name this machine's host, user,
// paths and processes, which are nobody else's business by default.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/zkchaos/zkchaos/internal/setting"
)

// Server serves one results folder.
type Server struct {
	root *os.Root
	fsys fs.FS
	// loopbackOnly makes the server refuse requests whose Host is not a
	// loopback name (a DNS-rebinding page in the user's browser would
	// send its own).
	loopbackOnly bool
	log          *slog.Logger
}

// Open opens the results folder dir. A missing folder or a file is bad
// input, reported before anything listens.
func Open(dir string, loopbackOnly bool, log *slog.Logger) (*Server, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("results folder %s: no such folder", dir)
	case err != nil:
		return nil, fmt.Errorf("results folder %s: %w", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("results folder %s is not a folder", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("results folder %s: %w", dir, err)
	}
	return &Server{root: root, fsys: guardFS{root.FS()}, loopbackOnly: loopbackOnly, log: log}, nil
}

// Close releases the results folder.
func (s *Server) Close() error { return s.root.Close() }

// Handler routes: "/" the index, "/_compare" the compare page ("_" starts
// no test name, so no run folder can shadow either), every other GET a
// file or folder of the results folder.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /_compare", s.compare)
	// Browsers ask every page's server for an icon; none is an answer,
	// not a 404 in the console.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.Handle("GET /", http.FileServerFS(s.fsys))
	return s.guard(mux)
}

// guard sets the headers every answer carries and refuses foreign Host
// names when the server is loopback-only.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if s.loopbackOnly && !loopbackHost(r.Host) {
			http.Error(w, "this server answers only requests addressed to a loopback name (127.0.0.1, ::1, localhost)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guardFS turns every refusal of the root other than "no such file" into
// fs.ErrPermission, which http.FileServerFS answers with 403: a path that
// escapes the results folder through a symlink is refused, not a server
// error.
type guardFS struct{ fs.FS }

func (g guardFS) Open(name string) (fs.File, error) {
	f, err := g.FS.Open(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f, err
}

// Run listens on addr and serves until ctx ends, then shuts down, giving
// requests in flight a few seconds. ready is called with the address
// listened on (the port chosen when addr's is 0).
func (s *Server) Run(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("address %s is already in use (another chaos serve?); pick another with %s", addr, setting.Name("Addr"))
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	if ready != nil {
		ready(ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	err = srv.Shutdown(shut)
	if errors.Is(err, context.DeadlineExceeded) {
		// What is still open after the grace is closed: a browser's
		// preconnected socket that never sent a request (Shutdown waits
		// up to 5 s for those), or a client too slow to finish. The
		// server only reads files, so nothing is left half-written.
		s.log.Info("connections still open after the grace period were closed", "grace", ShutdownGrace)
		err = srv.Close()
	}
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// ShutdownGrace is how long Run lets requests in flight finish once its
// context ends; a variable so the tests can shorten it.
var ShutdownGrace = 3 * time.Second
