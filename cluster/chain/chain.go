// Package chain writes the shell commands of a server's partition rules,
// for the backends that run iptables where the server lives (inside a
// container, on a remote host over SSH): one chain of the harness's own,
// hooked into INPUT and OUTPUT, holding DROP rules per peer, so flushing
// it heals the server and deleting it removes every trace. The local
// backend drives iptables directly (netns.Host) and needs no script.
package chain

import (
	"fmt"
	"net/netip"
	"strings"
)

// Isolate is a script (sh -e) that creates chain and its hooks when
// missing and drops all traffic to and from each of ips, and the rules
// iptables -S must list afterwards (the check).
func Isolate(chain string, ips []string) (script string, want []string, err error) {
	var b strings.Builder
	// Create the chain and the jumps once; -C tells whether a jump exists.
	fmt.Fprintf(&b, "iptables -w -S | grep -qx -- '-N %[1]s' || iptables -w -N %[1]s\n", chain)
	for _, hook := range []string{"INPUT", "OUTPUT"} {
		fmt.Fprintf(&b, "iptables -w -C %[1]s -j %[2]s 2>/dev/null || iptables -w -I %[1]s -j %[2]s\n", hook, chain)
	}
	for _, ip := range ips {
		if _, err := netip.ParseAddr(ip); err != nil {
			return "", nil, fmt.Errorf("peer %s is not an IP address", ip)
		}
		for _, dir := range []string{"-s", "-d"} {
			fmt.Fprintf(&b, "iptables -w -A %s %s %s -j DROP\n", chain, dir, ip)
			want = append(want, fmt.Sprintf("-A %s %s %s/32 -j DROP", chain, dir, ip))
		}
	}
	return b.String(), want, nil
}

// Flush is a script that empties chain when it exists.
func Flush(chain string) string {
	return fmt.Sprintf("if iptables -w -S | grep -qx -- '-N %[1]s'; then iptables -w -F %[1]s; fi", chain)
}

// Remove is a script that unhooks, empties and deletes chain, and
// succeeds when it does not exist: what a host that outlives the run
// must be left without (a container's go with its network namespace).
func Remove(chain string) string {
	return fmt.Sprintf(`for h in INPUT OUTPUT; do while iptables -w -D $h -j %[1]s 2>/dev/null; do :; done; done
iptables -w -F %[1]s 2>/dev/null; iptables -w -X %[1]s 2>/dev/null
`, chain)
}

// Rules picks chain's rules out of iptables -S. The whole table is
// listed because iptables-nft answers -S of a missing chain with a
// misleading error.
func Rules(out, chain string) []string {
	var rules []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "-A "+chain+" ") {
			rules = append(rules, l)
		}
	}
	return rules
}
