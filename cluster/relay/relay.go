// Package relay forwards TCP connections made on one address to another,
// inside the controller: how workers in the run's namespaces reach
// servers outside the run's bridge (an external ensemble, or servers on
// remote hosts) without any change to the host's firewall or routes.
package relay

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Why a relay. Workers live in namespaces of their own on the run's
// bridge, which forwards nothing off the bridge (netns.bridgeRules drop
// it), and a namespace cannot reach the host's 127.0.0.0/8 at all (the
// kernel drops loopback addresses arriving on another interface). A relay
// on the bridge's gateway address, in the controller, accepts the
// workers' connections and dials exactly one of the user's addresses for
// each: traffic leaves the machine only towards the addresses the user
// named, nothing on the host's firewall, routes or sysctls changes, and a
// killed controller takes its relays with it, leaving nothing to sweep.
// Faults keep their meaning: isolate-holder cuts the worker from the
// gateway (the relays' address) in the worker's namespace, and a worker
// paused or cut off sends no pings through its relay either, so the
// server expires its session the same way.

// dialTimeout bounds the relay's connection to the server.
const dialTimeout = 5 * time.Second

// Relay forwards every connection made to its listener to target.
type Relay struct {
	ln     net.Listener
	target string
	log    *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on host at a port the kernel picks and forwards each
// connection to target.
func Start(host, target string, log *slog.Logger) (*Relay, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	r := &Relay{ln: ln, target: target, log: log, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

// Addr is where the relay listens.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

func (r *Relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				r.log.Warn("relay: accept", "listen", r.Addr(), "err", err)
			}
			return
		}
		if !r.track(c) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.pipe(c) }()
	}
}

// track records c so Close can end it; false once closed.
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.conns, c)
		c.Close()
	}
}

// pipe dials the server and copies both ways; each direction's end is
// passed on as a half-close (a four-letter word's answer ends with the
// server closing), and the pair is closed when both directions are done.
func (r *Relay) pipe(down net.Conn) {
	up, err := net.DialTimeout("tcp", r.target, dialTimeout)
	if err != nil {
		r.log.Warn("relay: dial server", "server", r.target, "err", err)
		r.untrack(down)
		return
	}
	if !r.track(up) {
		r.untrack(down, up)
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); copyHalf(up, down) }()
	go func() { defer wg.Done(); copyHalf(down, up) }()
	wg.Wait()
	r.untrack(down, up)
}

// copyHalf copies src to dst until src ends, then closes dst's writing
// side (or dst, when it cannot half-close) and src's reading side.
func copyHalf(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if t, ok := dst.(*net.TCPConn); ok {
		_ = t.CloseWrite()
	} else {
		dst.Close()
	}
	if t, ok := src.(*net.TCPConn); ok {
		_ = t.CloseRead()
	}
}

// Close stops accepting, ends every connection and waits for the copies.
func (r *Relay) Close() {
	r.mu.Lock()
	r.closed = true
	_ = r.ln.Close()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
