package runner

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/fakeworker"
	"github.com/zkchaos/zkchaos/resource/register"
)

// envFakeRegister makes the test binary a register that announces an
// address, says its last words on stderr and exits 1: a register whose
// apply log failed, for the controller's watch.
const envFakeRegister = "ZKCHAOS_TEST_FAKE_REGISTER"

// envRegister makes the test binary the real register (register.Serve),
// taking `chaos register`'s arguments as startRegister gives them: the
// services and the final phase are tested against it.
const envRegister = "ZKCHAOS_TEST_REGISTER"

// TestMain lets the test binary act as a fake worker process (see
// internal/testkit/fakeworker), a failing register or the real one, so the
// fleet, the services and the controller's watch are tested against real
// processes.
func TestMain(m *testing.M) {
	fakeworker.MaybeRun()
	if _, ok := os.LookupEnv(envRegister); ok {
		os.Exit(serveRegister(os.Args[1:]))
	}
	if msg, ok := os.LookupEnv(envFakeRegister); ok {
		fmt.Println(`{"listen":"127.0.0.1:1"}`)
		time.Sleep(200 * time.Millisecond)
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// serveRegister serves the register with startRegister's arguments
// (register --listen A --log P --fencing M --idempotency I) until SIGTERM.
func serveRegister(args []string) int {
	fs := flag.NewFlagSet("register", flag.ContinueOnError)
	listen, logPath := fs.String("listen", "", ""), fs.String("log", "", "")
	mode, idem := fs.String("fencing", "", ""), fs.String("idempotency", "", "")
	if len(args) == 0 || fs.Parse(args[1:]) != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err := register.Serve(ctx, register.Config{Listen: *listen, LogPath: *logPath, Mode: *mode, Idempotency: *idem,
		Secret: os.Getenv(register.SecretEnv), Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))},
		func(addr string) { fmt.Printf("{\"listen\":%q}\n", addr) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
