# The two commands of the README:
#   make run   install what is missing, build, run a default chaos run
#   make test  install what is missing, build, run every test
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO ?= go
BIN := bin/chaos
RUN_ARGS ?=
STATICCHECK_VERSION := v0.8.2

.PHONY: run test deps build image lint fmt-check bench clean cleanup

deps:
	@./scripts/install-deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/chaos

run: deps build
	./$(BIN) run $(RUN_ARGS)

# The docker backend's image, built offline once per machine (skipped when
# its tag exists, or with a note where no Docker engine answers: the
# docker tests then skip too).
image: build
	@if docker info >/dev/null 2>&1; then ./$(BIN) image build --quiet; \
	else echo "image: no Docker engine here; the docker backend's tests will skip"; fi

test: deps build image fmt-check
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: fmt-check
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# The report's bound at 100 000 operations (internal/synth): writing the
# report against reading the run, the page in Chromium (skipped without
# one), and each checker for scale (docs/architecture.md "Figures at scale").
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./checker/ ./register/
	$(GO) test -run '^$$' -bench 100k -benchtime 3x -benchmem ./report/ ./internal/pageload/
	$(GO) test -run '^$$' -bench Checkers100k -benchtime 1x ./checker/suite/

cleanup: build
	./$(BIN) cleanup

clean:
	rm -rf bin
