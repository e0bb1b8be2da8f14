package janitor

import (
	"os/signal"
	"syscall"
)

func signalIgnore() { signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE) }
