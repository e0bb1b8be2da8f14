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
# docs/measurements.md, "Integration test packages", has the figures.
if [ "$(id -u)" = 0 ] && [ -n "${UNNICE_TO:-}" ]; then
	exec nice -n "$((UNNICE_TO - $(nice)))" "$@"
fi
exec "$@"
