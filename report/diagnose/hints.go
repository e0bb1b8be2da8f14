package diagnose

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/resource/register"
)

// rule is one requirement of the protocol and the symptoms that usually
// mean a subject misses it.
type rule struct {
	// words match error texts (or the stderr tail) that point at the
	// requirement.
	words *regexp.Regexp
	// also matches the requirement from the counts alone, where error
	// texts say too little (nil: never).
	also func(Diagnosis) bool
	hint func() string
}

// rules, in the order their hints are given. The client libraries word
// the same refusal differently: ZooKeeper's NoAuth is go-zookeeper's "zk:
// not authenticated", Java's "KeeperErrorCode = NoAuth", kazoo's
// NoAuthError; a create with CREATOR_ALL_ACL and no credential is
// refused as InvalidACL.
var rules = []rule{
	{
		words: regexp.MustCompile(`(?i)noauth|not authenticated|invalid ?acl|auth ?failed`),
		also:  firstCreateTimedOut,
		hint: func() string {
			return fmt.Sprintf("ZooKeeper credentials: with %s on (the default) the worker must add the credential in %s "+
				"(digest:USER:PASSWORD) to its session before its first request, and create its nodes with CREATOR_ALL_ACL "+
				"plus READ_ACL_UNSAFE; without it every create under the run's lock root is refused (NoAuth), or a client that "+
				"retries the refusal times out on its first create (docs/worker-protocol.md, \"Credentials\")",
				setting.Name("ACL"), recipes.AuthEnv)
		},
	},
	{
		words: regexp.MustCompile(`(?i)\b401\b|unauthori[sz]ed|register secret`),
		hint: func() string {
			return fmt.Sprintf("the register's secret: every register call must carry the header \"Authorization: Bearer <secret>\" "+
				"with the secret from %s; a call without it is answered 401 and never reaches the register "+
				"(docs/worker-protocol.md, \"The register\")", register.SecretEnv)
		},
	},
	{
		words: regexp.MustCompile(`(?i)connection refused|no route to host|could not connect`),
		hint: func() string {
			return "the addresses: the worker must use the servers and the register the controller names in its " +
				"command line, not addresses of its own (docs/worker-protocol.md, \"Start-up\")"
		},
	},
}

// firstCreateTimedOut: no acquire (or campaign) was ever granted, and
// they ended in timeouts: a client that retries a refused first create,
// or waits for a connection it was refused, times out instead of saying
// NoAuth.
func firstCreateTimedOut(d Diagnosis) bool {
	for _, e := range d.Errors {
		if (e.F == history.FAcquire || e.F == history.FCampaign) && strings.Contains(strings.ToLower(e.Text), "timeout") &&
			granted(d, e.F) == 0 {
			return true
		}
	}
	return false
}

func granted(d Diagnosis, f string) int {
	for _, k := range d.Kinds {
		if k.F == f {
			return k.OK
		}
	}
	return 0
}

// hints are the requirements d's errors, stderr and counts point at,
// then what the hello's version says.
func hints(d Diagnosis) []string {
	var b strings.Builder
	for _, e := range d.Errors {
		b.WriteString(e.Text)
		b.WriteByte('\n')
	}
	b.WriteString(d.Stderr.Text)
	text := b.String()
	var out []string
	for _, r := range rules {
		if r.words.MatchString(text) || r.also != nil && r.also(d) {
			out = append(out, r.hint())
		}
	}
	if d.Hello {
		if n := worker.VersionNotice(d.Protocol); n != "" {
			out = append(out, "the protocol's version: "+n)
		}
	}
	return out
}
