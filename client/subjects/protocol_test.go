package subjects

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/client/worker"
)

// TestWorkersSendCurrentProtocol: the Java and Python workers of this
// project name the protocol version the controller speaks, so a change
// of the protocol (worker.Protocol) cannot leave them behind unnoticed.
func TestWorkersSendCurrentProtocol(t *testing.T) {
	java, err := curatorSources.ReadFile("curator/CuratorBase.java")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ src, want string }{
		"CuratorBase.java": {string(java), fmt.Sprintf("static final int PROTOCOL = %d;", worker.Protocol)},
		"kazoo_worker.py":  {string(kazooSource), fmt.Sprintf("PROTOCOL = %d ", worker.Protocol)},
	} {
		if !strings.Contains(tc.src, tc.want) || !strings.Contains(tc.src, `"protocol", PROTOCOL`) && !strings.Contains(tc.src, `"protocol": PROTOCOL`) {
			t.Errorf("%s: no %q sent as the hello's protocol (worker.Protocol is %d)", name, tc.want, worker.Protocol)
		}
	}
}
