#!/usr/bin/env bash
# unnice.sh PROGRAM [ARG...]
#
# go test's -exec for make test: go test itself runs at nice 10, so that
# compiling and linking about a hundred test binaries takes only the CPU
# the running tests leave. Each test binary is run back at the priority
# make test was started with when it is an integration package's (tests/:
# their real runs, two at a time, set the suite's length), and at 5 below
# it otherwise: the unit packages, which have the whole suite's length
# to finish in, then take only the CPU those runs leave, instead of
# slowing them in the suite's first minutes, when everything starts at
# once. go test runs each test binary in its package's folder, which
# tells the two apart. Raising a priority needs root; without it the
# tests stay at nice 10, all of them alike, and only the machine's other
# work is favoured over them. docs/measurements.md, "Integration test
# packages", has the figures.
if [ "$(id -u)" = 0 ] && [ -n "${UNNICE_TO:-}" ]; then
	root=$(cd "$(dirname "$0")/.." && pwd -P)
	to=$((UNNICE_TO + 5))
	case "$(pwd -P)/" in
	"$root"/tests/*) to=$UNNICE_TO ;;
	esac
	exec nice -n "$((to - $(nice)))" "$@"
fi
exec "$@"
