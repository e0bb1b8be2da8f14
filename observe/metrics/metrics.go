// Package metrics exposes a run's live figures in the Prometheus text
// format (chaos soak --metrics-addr), so a soak of hours can be watched
// from a dashboard that already scrapes Prometheus targets: operations by
// type and outcome, faults, violations per online checker, and the
// resource gauges of the latest sample (package resources).
//
// Every figure is read at scrape time from the run's own memory (the
// progress tracker, the sampler's last sample): nothing is kept here, so
// an 8-hour soak costs no more memory than a minute's. Workers are summed
// (a worker restarted after a fault is a new process; a series per
// process would grow without bound), the controller and each server's JVM
// have their own series.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/observe/resources"
)

// Sources are where the figures are read at each scrape; either may say
// false (nothing yet).
type Sources struct {
	Status    func() (progress.Status, bool)
	Resources func() (resources.Sample, bool)
}

// CheckAddr refuses anything but a loopback IP and a port: the figures
// name the run's processes and are served without authentication, so
// they are not offered to the network.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: want 127.0.0.1:PORT: %w", setting.Name("MetricsAddr"), addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s %q: only a loopback address is served (127.0.0.1:PORT or [::1]:PORT)", setting.Name("MetricsAddr"), addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%s %q: port %q is not a number 0..65535", setting.Name("MetricsAddr"), addr, port)
	}
	return nil
}

// Server serves /metrics until Close.
type Server struct {
	srv   *http.Server
	ln    net.Listener
	done  chan error
	once  sync.Once
	close error
}

// Listen checks addr and binds it: a port in use is found before the run
// starts, as bad input.
func Listen(addr string) (net.Listener, error) {
	if err := CheckAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", setting.Name("MetricsAddr"), addr, err)
	}
	return ln, nil
}

// Serve serves src's figures at /metrics on ln until Close.
func Serve(ln net.Listener, src Sources) *Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{src})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	servePprof(mux)
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln, done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s
}

// servePprof adds the controller's runtime profiles under /debug/pprof/:
// a soak that grows is diagnosed on the live process (`go tool pprof
// http://ADDR/debug/pprof/heap`), not by guessing from RSS after the
// fact. The address is loopback only (CheckAddr), as for the figures.
func servePprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// Addr is where the figures are served.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving, waiting up to a second for a scrape under way.
// Safe twice.
func (s *Server) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := s.srv.Shutdown(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = s.srv.Close()
		}
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		s.close = err
	})
	return s.close
}
