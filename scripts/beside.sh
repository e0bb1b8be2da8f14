#!/usr/bin/env bash
# beside.sh CHECK COMMAND [ARG...]
#
# Runs COMMAND, and the shell command CHECK beside it at the lowest CPU
# priority, then prints CHECK's output under a header and exits non-zero
# if either failed. make test runs go vet this way beside the tests, and
# CI runs staticcheck beside make test: a check that is not on the
# suite's critical path takes only the CPU the real runs leave idle,
# instead of running before the tests (go vet alone was two minutes on a
# cold cache, with both run tokens idle) or competing with them.
#
# CHECK runs in a session of its own, so that an interrupted COMMAND
# (Ctrl-C reaches only the foreground) takes CHECK's whole tree with it.
# Where the kernel groups each session's processes for the scheduler
# (sched_autogroup_enabled, the default of most distributions), a nice
# value weighs only against processes of the same session: a new session
# at nice 19 gets as much CPU as all of make test together. So the
# session's own group is set to nice 19 too (/proc/self/autogroup).
# docs/measurements.md, "Integration test packages", has the figures.
set -uo pipefail
if [ $# -lt 2 ]; then
	echo "usage: beside.sh CHECK COMMAND [ARG...]" >&2
	exit 255
fi
check=$1
shift
log=$(mktemp)
setsid sh -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null; exec nice -n 19 sh -c "$1"' beside "$check" >"$log" 2>&1 &
pid=$!
trap 'kill -- -"$pid" 2>/dev/null; rm -f "$log"' EXIT
trap 'exit 130' INT TERM
"$@"
rc=$?
wait "$pid"
check_rc=$?
echo "== $check (beside): exit $check_rc"
cat "$log"
if [ "$rc" -ne 0 ] || [ "$check_rc" -ne 0 ]; then
	echo "beside.sh: $* exited $rc; $check exited $check_rc" >&2
	exit 1
fi
