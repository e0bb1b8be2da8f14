package external

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
)

func TestParseAddrs(t *testing.T) {
	good := map[string][]string{
		"127.0.0.1:2181":                      {"127.0.0.1:2181"},
		" zk1:2181, zk2:2182 ,":               {"zk1:2181", "zk2:2182"},
		"[::1]:2181,10.0.0.3:2181":            {"[::1]:2181", "10.0.0.3:2181"},
		"zk.example:2181,zk.example:2281,x:1": {"zk.example:2181", "zk.example:2281", "x:1"},
	}
	for in, want := range good {
		got, err := ParseAddrs(in)
		if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("ParseAddrs(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                   "no address",
		" , ":                "no address",
		"zk1":                "not host:port",
		":2181":              "no host",
		"zk1:0":              "not 1..65535",
		"zk1:65536":          "not 1..65535",
		"zk1:http":           "not 1..65535",
		"zk1:2181,zk1:2181":  "given twice",
		"zk1:2181,zk2":       `"zk2": not host:port`,
		"127.0.0.1:2181/foo": "not 1..65535",
	}
	for in, want := range bad {
		if _, err := ParseAddrs(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAddrs(%q) error %v, want one with %q", in, err, want)
		}
	}
}

func TestCapabilitiesLackEveryServerVerb(t *testing.T) {
	caps := Capabilities()
	for _, v := range []cluster.Capability{cluster.CanPause, cluster.CanKill, cluster.CanPartition} {
		err := caps.Need(v)
		if err == nil || !strings.Contains(err.Error(), "the external backend cannot") {
			t.Errorf("Need(%s) = %v", v, err)
		}
	}
}

// server answers every connection with answer after reading its request,
// then closes, as a ZooKeeper server answers a four-letter word; it
// counts the connections.
func server(t *testing.T, answer string) (addr string, conns chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns = make(chan string, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 4)
				_, _ = io.ReadFull(c, b)
				conns <- string(b)
				_, _ = io.WriteString(c, answer)
			}()
		}
	}()
	return ln.Addr().String(), conns
}

const srvrFollower = "Zookeeper version: 3.8.4\nLatency min/avg/max: 0/0.0/0\nReceived: 1\nSent: 0\nConnections: 1\nOutstanding: 0\nZxid: 0x100000002\nMode: follower\nNode count: 5\n"

func TestProbe(t *testing.T) {
	ctx := context.Background()
	follower, _ := server(t, srvrFollower)
	refusing, _ := server(t, "srvr is not executed because it is not in the whitelist.\n")
	notServing, _ := server(t, "This ZooKeeper instance is not currently serving requests\n")
	if err := Probe(ctx, []string{follower, refusing}); err != nil {
		t.Errorf("a serving server and one that refuses srvr: %v", err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	err := Probe(ctx, []string{follower, closed, notServing})
	if err == nil || !strings.Contains(err.Error(), "ZooKeeper at "+closed) || !strings.Contains(err.Error(), "ZooKeeper at "+notServing+": not serving") {
		t.Errorf("Probe of a closed port and a server without quorum: %v", err)
	}
	if strings.Contains(err.Error(), follower) {
		t.Errorf("the serving server is blamed: %v", err)
	}
}

func TestRelayCarriesAnswers(t *testing.T) {
	addr, conns := server(t, srvrFollower)
	c, err := New(Config{Addrs: []string{addr}, RelayHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	n := c.Nodes()[0]
	if n.ClientAddr() == addr || c.ConnectString() != n.ClientAddr() {
		t.Fatalf("client address %s, connect string %s: want the relay's, not %s", n.ClientAddr(), c.ConnectString(), addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		st, err := n.Status(ctx)
		if err != nil || st.Mode != "follower" {
			t.Fatalf("srvr through the relay: %+v, %v", st, err)
		}
		if got := <-conns; got != "srvr" {
			t.Fatalf("the server read %q", got)
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", n.ClientAddr(), time.Second); err == nil {
		t.Errorf("the relay still accepts after Close")
	}
}

func TestServerVerbsUnsupported(t *testing.T) {
	c, err := New(Config{Addrs: []string{"127.0.0.1:2181"}})
	if err != nil {
		t.Fatal(err)
	}
	n := c.Nodes()[0]
	ctx := context.Background()
	if n.ClientAddr() != "127.0.0.1:2181" {
		t.Errorf("without a relay the client address is %s", n.ClientAddr())
	}
	_, e1 := n.Pause(ctx)
	_, e2 := n.Kill(ctx)
	_, e3 := n.Isolate(ctx, nil)
	_, e4 := n.Start(ctx)
	for _, err := range []error{e1, e2, e3, e4, n.Stop(ctx)} {
		if !errors.Is(err, cluster.ErrUnsupported) {
			t.Errorf("server verb: %v, want ErrUnsupported", err)
		}
	}
	if did, err := c.Restore(ctx); err != nil || len(did) > 0 {
		t.Errorf("Restore: %v, %v", did, err)
	}
}
