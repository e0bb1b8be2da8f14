package serve

import (
	"fmt"
	"net"
	"strings"

	"github.com/zkchaos/zkchaos/internal/setting"
)

// CheckAddr refuses a listen address that is not on loopback unless
// allowRemote says the user wants the results reachable from elsewhere.
// An empty host (":8080") means every interface, so it is remote too; the
// name "localhost" is taken as loopback without asking a resolver.
func CheckAddr(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %w (want host:port, e.g. 127.0.0.1:8080)", setting.Name("Addr"), addr, err)
	}
	if port == "" {
		return fmt.Errorf("%s %q: no port (want host:port, e.g. 127.0.0.1:8080)", setting.Name("Addr"), addr)
	}
	if allowRemote || loopbackName(host) {
		return nil
	}
	where := host
	if host == "" {
		where = "every interface"
	}
	return fmt.Errorf("%s %s listens on %s, not on loopback: the results would be readable from other machines; add %s if that is what you want",
		setting.Name("Addr"), addr, where, setting.Name("AllowRemote"))
}

// loopbackName says host (no port) is 127.0.0.0/8, ::1 or localhost.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost says a request's Host header (with or without a port)
// names loopback.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	return loopbackName(host)
}
