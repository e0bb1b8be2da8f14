package janitor

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/netns"
)

// TestZNodesMessageKeepsTheSecret: the run's identity travels to the
// janitor on its stdin; neither a malformed line holding it nor the
// znodes message is ever logged with it, and a controller that said done
// leaves the removal to itself (nothing is dialled).
func TestZNodesMessageKeepsTheSecret(t *testing.T) {
	if netns.Available() != nil {
		t.Skip("needs root with ip and iptables: Serve sweeps the run's slots")
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	in := strings.NewReader(`{"znodes":{"zk":"127.0.0.1:1","root":"/zkchaos/x","auth":"digest:zkchaos:s3cret` + "\n" +
		`{"znodes":{"zk":"127.0.0.1:1","root":"/zkchaos/x","auth":"digest:zkchaos:s3cret"}}` + "\n" + `{"done":true}` + "\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := Serve(ctx, "test-janitor-znodes", in, log); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "s3cret") {
		t.Errorf("the janitor logged the run's identity:\n%s", out)
	}
	for _, want := range []string{"janitor: bad message", "watching the run's znodes", "root=/zkchaos/x"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "znodes removed") || time.Since(start) > 10*time.Second {
		t.Errorf("a controller that said done had its znodes removed by the janitor (%s):\n%s", time.Since(start), out)
	}
}
