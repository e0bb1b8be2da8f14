// Package soak holds the integration tests of chaos soak against the real
// binary, a real ensemble and real workers: a short fenced soak serves
// its figures over loopback while it runs, samples its resources into
// resources.jsonl, logs its summary lines and shows its soak section in
// report.html; an unfenced soak stops within seconds of its first
// violation. Both are small (20 s and one fault cycle) and run side by
// side, so the package stays under a minute.
package soak

import (
	"testing"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

func TestMain(m *testing.M) { chaostest.Main(m) }
