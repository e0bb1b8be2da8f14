package netns

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// FwdChain is the root-namespace chain that lets bridged traffic of our
// slots through a FORWARD policy of DROP (Docker sets one, and with
// br_netfilter loaded bridged frames traverse FORWARD).
const FwdChain = "ZKCHAOS-FWD"

// fwdLock serialises edits of FwdChain and its jump across processes: the
// check-then-insert of the jump and the delete-when-empty of the chain are
// not atomic in iptables, and parallel runs (or parallel test binaries)
// would otherwise insert the jump twice or delete a chain in use.
// A slot's lock, when held, is always taken before this one.
func fwdLock() (unlock func(), err error) {
	unlock, _, err = lockFile(context.Background(), filepath.Join(StateDir, "fwd.lock"), true)
	return unlock, err
}

// bridgeRules are the slot's rules in FwdChain, in order: traffic between
// the slot's namespaces passes; anything else from the bridge is dropped,
// so that nothing a namespace sends (a DNS query, a stray connect) is ever
// routed off the machine, even where FORWARD's policy is ACCEPT.
func bridgeRules(bridge string) [][]string {
	return [][]string{
		{"-i", bridge, "-o", bridge, "-j", "ACCEPT"},
		{"-i", bridge, "-j", "DROP"},
	}
}

func addForward(ctx context.Context, bridge string) error {
	unlock, err := fwdLock()
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := ipt(ctx, "-N", FwdChain); err != nil && !stderrHas(err, "already exists", "File exists") {
		return fmt.Errorf("create chain %s: %w", FwdChain, err)
	}
	if err := ensureJumpFirst(ctx); err != nil {
		return err
	}
	// Remove any partial set from an earlier attempt, so the order holds.
	deleteRules(ctx, bridge)
	for _, r := range bridgeRules(bridge) {
		if _, err := ipt(ctx, append([]string{"-A", FwdChain}, r...)...); err != nil {
			return fmt.Errorf("allow forwarding on %s: %w", bridge, err)
		}
	}
	return nil
}

// ensureJumpFirst makes the FORWARD→FwdChain jump the first rule, exactly
// once: anything before it (Docker's chains) might drop our frames.
func ensureJumpFirst(ctx context.Context) error {
	out, err := ipt(ctx, "-S", "FORWARD")
	if err != nil {
		return fmt.Errorf("list FORWARD: %w", err)
	}
	jump := "-A FORWARD -j " + FwdChain
	var rules []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "-A FORWARD") {
			rules = append(rules, strings.TrimSpace(l))
		}
	}
	n := 0
	for _, r := range rules {
		if r == jump {
			n++
		}
	}
	if n == 1 && rules[0] == jump {
		return nil
	}
	for ; n > 0; n-- {
		if _, err := ipt(ctx, "-D", "FORWARD", "-j", FwdChain); err != nil {
			return fmt.Errorf("remove misplaced jump to %s: %w", FwdChain, err)
		}
	}
	if _, err := ipt(ctx, "-I", "FORWARD", "1", "-j", FwdChain); err != nil {
		return fmt.Errorf("jump to %s from FORWARD: %w", FwdChain, err)
	}
	return nil
}

// deleteRules removes every rule of the bridge from FwdChain; missing
// rules or a missing chain are fine.
func deleteRules(ctx context.Context, bridge string) {
	for _, r := range bridgeRules(bridge) {
		for i := 0; i < 8; i++ { // duplicates, if any; bounded so a bug cannot spin
			if _, err := ipt(ctx, append([]string{"-D", FwdChain}, r...)...); err != nil {
				break
			}
		}
	}
}

// removeForward deletes the slot's rules, and the chain and its jump when
// no slot uses it any more, leaving the host's FORWARD as it was.
func removeForward(ctx context.Context, bridge string) error {
	unlock, err := fwdLock()
	if err != nil {
		return err
	}
	defer unlock()
	deleteRules(ctx, bridge)
	exists, rules, err := chainState(ctx)
	if err != nil {
		return err
	}
	if !exists {
		return nil
	}
	if rules > 0 {
		return nil // another slot still uses it
	}
	for i := 0; i < 8; i++ {
		if _, err := ipt(ctx, "-D", "FORWARD", "-j", FwdChain); err != nil {
			break
		}
	}
	if _, err := ipt(ctx, "-X", FwdChain); err != nil {
		return fmt.Errorf("delete chain %s: %w", FwdChain, err)
	}
	return nil
}

// chainState reports whether FwdChain exists and how many rules it has.
// It lists the whole filter table because iptables-nft 1.8.9 answers
// "-S <missing chain>" with a misleading "chain ... is incompatible".
func chainState(ctx context.Context) (exists bool, rules int, err error) {
	out, err := ipt(ctx, "-S")
	if err != nil {
		return false, 0, fmt.Errorf("list filter table: %w", err)
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "-N" && f[1] == FwdChain:
			exists = true
		case len(f) > 1 && f[0] == "-A" && f[1] == FwdChain:
			rules++
		}
	}
	return exists, rules, nil
}
