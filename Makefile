# The two commands of the README:
#   make run   install what a default run uses when missing, build, run a
#              default chaos run
#   make test  install everything the tests use when missing, build, run
#              every test, then the ten slowest packages and tests
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO ?= go
# -trimpath: builds leave the checkout's path out, so that the build
# cache serves every clone and worktree of the repository on a machine
# (without it a fresh clone compiles every package of the module again
# before the first test runs: 23 s against 6 s for bin/chaos alone). A
# GOFLAGS of your own replaces it.
export GOFLAGS ?= -trimpath
BIN := bin/chaos
# The built-in worker: chaos run starts it, one process per client, from
# the folder of its own executable, so they are built into bin/ together.
# It is a binary of its own so that each start initialises only the
# packages a worker needs (docs/measurements.md, "Worker start"):
# chaos-worker links ZooKeeper's recipes only, and hands a worker of
# Redis or etcd over to chaos-worker-services, which links their clients
# too. One go build links the three at once.
CMDS := ./cmd/chaos ./cmd/chaos-worker ./cmd/chaos-worker-services
RUN_ARGS ?=
STATICCHECK_VERSION := v0.8.2

.PHONY: run test go-test deps deps-run build image lint staticcheck fmt-check bench clean cleanup man

# The two sets of scripts/install-deps.sh: deps-run what a default chaos
# run uses (Java, ZooKeeper's jars, iproute2, iptables), deps everything a
# test, a benchmark or a non-default run uses.
deps-run:
	@./scripts/install-deps.sh run

deps:
	@./scripts/install-deps.sh test

build:
	$(GO) build -o bin/ $(CMDS)

run: deps-run build
	./$(BIN) run $(RUN_ARGS)

# The docker backend's image, built offline once per machine (skipped when
# its tag exists, or with a note where no Docker engine answers: the
# docker tests then skip too).
image: build
	@if docker info >/dev/null 2>&1; then ./$(BIN) image build --quiet; \
	else echo "image: no Docker engine here; the docker backend's tests will skip"; fi

# The tests run with -json so that internal/testkit/slowest can print, as
# go test would, each package's ok line and every failing test's output,
# then the ten slowest packages and tests (a test over 60 s must say why
# in a comment) and the run tokens' time. pipefail: go test's own status
# counts as well as what the stream showed. The integration packages
# (tests/) come first and 24 packages go at once: their real runs, two
# at a time machine-wide (the run tokens), are most of the suite's time,
# so they start at once, and the unit packages run beside them from the
# start (a real run mostly waits). In go test's default order (import
# paths) the tokens stood idle for the suite's first two minutes while
# the unit packages ran alone; with eight at once the unit packages
# waited for the integration packages' slots, and the long ones (the
# conformance tests' ensembles, 160 s) ended the suite alone. The tests
# run the binaries that build has just made
# (ZKCHAOS_TEST_PREBUILT, chaostest.Prebuilt) unless a source is newer.
# -ldflags=-w: the test binaries are linked without DWARF, which no test
# reads (a quarter less CPU for each of about a hundred links; panics
# still print their stacks).
SLOWEST := bin/slowest
TEST_PKGS = $$($(GO) list ./tests/...) $$($(GO) list ./... | grep -v /tests/)
# go vet runs beside the tests at the lowest priority (scripts/beside.sh)
# and its report follows theirs: before them it held both run tokens idle
# for up to two minutes on a cold cache.
test: deps build image fmt-check
	./scripts/beside.sh "$(GO) vet ./..." $(MAKE) --no-print-directory go-test

# The tests alone, without make test's installs, builds and go vet. go
# test compiles and links at nice 10 and runs each test binary back at
# make's priority (scripts/unnice.sh): the build of the later packages
# yields to the tests already running.
go-test:
	$(GO) build -o $(SLOWEST) ./internal/testkit/slowest/cmd
	set -o pipefail; UNNICE_TO=$$(nice) ZKCHAOS_TEST_PREBUILT=$(CURDIR)/bin nice -n 10 $(GO) test -exec $(CURDIR)/scripts/unnice.sh -ldflags=-w -json -count=1 -p 24 -timeout 30m $(TEST_PKGS) | ./$(SLOWEST)

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: fmt-check
	$(GO) vet ./...
	$(MAKE) --no-print-directory staticcheck

# make lint without what make test already runs (gofmt, go vet): CI runs
# it beside make test, where a second go vet would analyse every package
# and dependency again at the same time (two CPU-minutes on 2 cores).
staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# Every benchmark of the repository, in about a minute on a 2-core
# machine: their inputs are large (1M-event histories, 100 000-operation
# runs), so one to three iterations each give a reading.
#   BENCH_DEFAULT (go's 1 s):  register BenchmarkWrite
#   BENCH_ONCE (1x):  checker/fence BenchmarkDoubleWriter (1M entries);
#     checker/linear BenchmarkPorcupineConcurrency (100k events, 1-50
#     workers per key), BenchmarkLinearHour (register and mutex on a
#     synthetic 1-hour run: whole, segmented, streamed) and
#     BenchmarkLinearStreamHeld (what a stream keeps over 15 min, 1 h,
#     2 h); checker/suite BenchmarkCheckers (10k, 100k, 1M
#     events), BenchmarkCheckers100k (internal/testkit/synth), BenchmarkLockCheckers
#     (each lock-level checker and lockview.Of at 100k and 1M events, 1 and
#     8 keys) and BenchmarkSuiteHour (the suite on a synthetic 1-hour run);
#     run/bench BenchmarkExecToHello (the built-in worker started 50 times
#     against a one-node ZooKeeper: exec-to-hello median and p95;
#     -hello.baseline CMD times another worker command beside it)
#   BENCH_THRICE (3x):  story BenchmarkTell; report BenchmarkReadHistory100k,
#     BenchmarkReport100k, BenchmarkReportOverRead100k (the report's
#     bound, docs/measurements.md "Report and pages"); internal/testkit/pageload
#     BenchmarkPageLoad100k (Chromium through internal/testkit/browser: skipped only
#     where scripts/install-deps.sh could not install it)
# A package with a benchmark in none of the lists stops `make bench`, so
# a new benchmark is not silently left out.
# Then `chaos bench --quick`: the built-in worker's start (exec to hello,
# 50 starts), raw ZooKeeper create+delete pairs against seed, zk-lock and
# Curator on a real 3-node ensemble, and the harness's overhead, with the
# targets met or not (about a minute; figures of a machine shared with
# other runs are low).
BENCH_DEFAULT := ./resource/register/
BENCH_ONCE := ./checker/fence/ ./checker/linear/ ./checker/suite/ ./run/bench/
BENCH_THRICE := ./report/story/ ./report/ ./internal/testkit/pageload/
bench: deps build
	@missing=$$(grep -rl --include='*_test.go' '^func Benchmark' . | xargs -n1 dirname | sort -u | \
	  while read -r d; do case " $(BENCH_DEFAULT) $(BENCH_ONCE) $(BENCH_THRICE) " in *" $$d/ "*) ;; *) echo "$$d/";; esac; done); \
	if [ -n "$$missing" ]; then echo "bench: benchmarks in $$missing are in no list of the Makefile"; exit 1; fi
	$(GO) test -run '^$$' -bench . -benchmem $(BENCH_DEFAULT)
	$(GO) test -run '^$$' -bench . -benchtime 1x -benchmem $(BENCH_ONCE)
	$(GO) test -run '^$$' -bench . -benchtime 3x -benchmem $(BENCH_THRICE)
	./$(BIN) bench --quick

cleanup: build
	./$(BIN) cleanup

# The man pages of chaos and its commands, generated from the command
# line's own definitions into man/man1 (gitignored: never committed);
# read them with `man -M man chaos-run`.
MAN_DIR := man/man1
man: build
	rm -rf $(MAN_DIR)
	./$(BIN) man $(MAN_DIR)

clean:
	rm -rf bin man
