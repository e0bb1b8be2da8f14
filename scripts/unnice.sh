#!/usr/bin/env bash
# unnice.sh PROGRAM [ARG...]
#
# go test's -exec for make test: go test itself runs at nice 10, so that
# compiling and linking about a hundred test binaries takes only the CPU
# the running tests leave; each test binary is run back at the priority
# make test was started with, so that the tests (their real runs, the
# servers and workers they start) never wait behind the build. Raising a
# priority needs root; without it the tests stay at nice 10, all of them
# alike, and only the machine's other work is favoured over them.
#
# The integration packages' binaries (go test runs each in its package's
# folder: tests/...) go further, into a session of their own. Where the
# kernel groups each session's processes for the scheduler
# (sched_autogroup_enabled), the CPU is shared between sessions first, so
# the two real runs the run tokens allow, each in its test binary's
# session, get as much CPU as the build and the unit packages together:
# the suite's time is the runs' time (its critical path), and on a
# saturated machine a run's start otherwise took two to three times as
# long. This script stays in go test's session and passes on what it is
# sent (Ctrl-C, go test's timeout) to the new session.
# docs/measurements.md, "Integration test packages", has the figures.
set -u
cmd=("$@")
if [ "$(id -u)" = 0 ] && [ -n "${UNNICE_TO:-}" ]; then
	cmd=(nice -n "$((UNNICE_TO - $(nice)))" "$@")
fi
case "$PWD" in
*/tests/*) ;;
*) exec "${cmd[@]}" ;;
esac
# A background job of a script is in the script's process group, so
# setsid makes the new session without forking and $pid leads it. bash
# starts it with SIGINT and SIGQUIT ignored, which a test binary and the
# runs it starts would keep: perl (perl-base is in every Debian) puts
# them back before the exec.
perl -MPOSIX -e '$SIG{INT} = $SIG{QUIT} = "DEFAULT"; POSIX::setsid() > 0 or die "setsid: $!\n"; exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!\n"' -- "${cmd[@]}" &
pid=$!
for sig in INT TERM QUIT HUP; do
	trap "kill -$sig -- -$pid 2>/dev/null" "$sig"
done
# wait returns early when a signal is trapped; wait again until the
# binary has ended, and end as it did.
while :; do
	wait "$pid"
	rc=$?
	kill -0 "$pid" 2>/dev/null || exit "$rc"
done
