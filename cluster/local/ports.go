package local

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Loopback ports are chosen at random below the kernel's ephemeral range
// and checked by binding them. Below the ephemeral range, no outgoing
// connection (ours, the JVMs', another test's) can take a port between our
// check and the JVM's bind, which is the usual way "free port" pickers
// race; the random start and the in-process set keep concurrent clusters
// apart.
var (
	portsMu sync.Mutex
	taken   = map[int]bool{}
)

func freePorts(n int) ([]int, error) {
	lo, hi := 20000, ephemeralLow()
	if hi-lo < 1000 {
		lo, hi = 10000, 20000
	}
	portsMu.Lock()
	defer portsMu.Unlock()
	var out []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for tries := 0; len(out) < n; tries++ {
		if tries > 2000 {
			return nil, fmt.Errorf("no %d free ports in %d..%d", n, lo, hi)
		}
		p := lo + rand.IntN(hi-lo)
		if taken[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		held = append(held, l)
		taken[p] = true
		out = append(out, p)
	}
	return out, nil
}

func releasePorts(ps ...int) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for _, p := range ps {
		delete(taken, p)
	}
}

func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	v, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return v
}
