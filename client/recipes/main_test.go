package recipes

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/host/proc"
)

// zkAddr is the client address of the one-node ensemble shared by the
// package's tests ("" when ZooKeeper is not installed).
var zkAddr string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests starts one real ZooKeeper for the whole package: a JVM takes
// seconds to start, and the tests run one after another anyway.
func runTests(m *testing.M) int {
	if err := local.Available(); err != nil {
		fmt.Fprintf(os.Stderr, "no ZooKeeper (%v): ZooKeeper tests skip\n", err)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "zkchaos-recipes-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// wchp on top of the harness's words: TestQueueWatchesPredecessorOnly
	// looks at the watches from the server's side.
	c, err := local.Launch(ctx, local.Config{Nodes: 1, Dir: dir, Env: proc.Env("test-recipes", proc.Self()),
		FourLetterWords: append(slices.Clone(cluster.FourLetterWords), "wchp")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := c.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "close cluster:", err)
		}
	}()
	zkAddr = c.ConnectString()
	return m.Run()
}

func needZK(t *testing.T) {
	t.Helper()
	if zkAddr == "" {
		t.Skip("no ZooKeeper")
	}
}

// wchp asks the server which sessions watch which paths (four-letter word
// wchp), so a test can see the recipe's watches from the server's side.
func wchp(t *testing.T, addr string) map[string][]int64 {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("wchp: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "wchp"); err != nil {
		t.Fatalf("wchp: %v", err)
	}
	out := map[string][]int64{}
	cur := ""
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "/"):
			cur = strings.TrimSpace(line)
			out[cur] = out[cur][:0:0]
		case strings.HasPrefix(strings.TrimSpace(line), "0x") && cur != "":
			var id int64
			if _, err := fmt.Sscanf(strings.TrimSpace(line), "0x%x", &id); err == nil {
				out[cur] = append(out[cur], id)
			}
		}
	}
	return out
}

// proxy stands between a client and the server so a test can cut the
// client off (the server keeps running and expires the session on its own
// clock, which pausing the server would not do reliably).
type proxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	blocked bool
	conns   []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.blocked {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close(); c.Close() }()
		go func() { io.Copy(c, s); s.Close(); c.Close() }()
	}
}

// block drops every connection and refuses new ones.
func (p *proxy) block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) unblock() {
	p.mu.Lock()
	p.blocked = false
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.ln.Close()
	p.block()
}
