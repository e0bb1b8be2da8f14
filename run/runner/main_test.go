package runner

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/fakeworker"
)

// envFakeRegister makes the test binary a register that announces an
// address, says its last words on stderr and exits 1: a register whose
// apply log failed, for the controller's watch.
const envFakeRegister = "ZKCHAOS_TEST_FAKE_REGISTER"

// TestMain lets the test binary act as a fake worker process (see
// internal/testkit/fakeworker) or a failing register, so the fleet and the
// controller's watch are tested against real processes.
func TestMain(m *testing.M) {
	fakeworker.MaybeRun()
	if msg, ok := os.LookupEnv(envFakeRegister); ok {
		fmt.Println(`{"listen":"127.0.0.1:1"}`)
		time.Sleep(200 * time.Millisecond)
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
