package register

import (
	"crypto/subtle"
	"net/http"
	"strings"
	"sync/atomic"
)

// SecretEnv is the environment variable through which `chaos register`,
// the workers and any other client of one run's register receive that
// run's secret. The environment, not a flag: a command line is readable
// by every user in ps and /proc.
const SecretEnv = "ZKCHAOS_REGISTER_SECRET"

// A register answers whoever reaches its address: in loopback mode that
// is every process of the host, and an anonymous read or write would land
// in the apply log, which the checkers take as ground truth. So every call
// must carry the run's secret as "Authorization: Bearer <secret>". A call
// without it is answered 401 before its body is read, never reaches the
// commit path, and so never reaches the apply log; the register counts
// such calls in its own log (register.log) instead.

// refusedLogged is how many refused calls are logged one by one; after
// that only the count grows (reported at shutdown), so a flood of
// anonymous calls cannot fill the disk through the log.
const refusedLogged = 20

// gate admits only calls that carry secret.
type gate struct {
	secret  []byte
	refused atomic.Int64
}

// wrap refuses every call to next that does not present the secret. An
// empty secret admits everything: only in-process tests use that, `chaos
// register` refuses to start without one.
func (g *gate) wrap(next http.Handler, s *server) http.Handler {
	if len(g.secret) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.admits(r) {
			next.ServeHTTP(w, r)
			return
		}
		n := g.refused.Add(1)
		if n <= refusedLogged {
			s.logger.Warn("refused a call without the run's secret (not in the apply log)",
				"remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "refused", n)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="zkchaos register"`)
		httpError(w, http.StatusUnauthorized, "missing or wrong register secret (Authorization: Bearer, from "+SecretEnv+")")
	})
}

// admits compares in constant time, so the answer's timing says nothing
// about how much of a guess was right.
func (g *gate) admits(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(tok), g.secret) == 1
}

// bearer is the header value a client sends; "" without a secret.
func bearer(secret string) string {
	if secret == "" {
		return ""
	}
	return "Bearer " + secret
}
