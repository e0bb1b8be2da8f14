# The two commands of the README:
#   make run   install what is missing, build, run a default chaos run
#   make test  install what is missing, build, run every test
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO ?= go
BIN := bin/chaos
RUN_ARGS ?=
STATICCHECK_VERSION := v0.8.2

.PHONY: run test deps build lint fmt-check bench clean cleanup

deps:
	@./scripts/install-deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/chaos

run: deps build
	./$(BIN) run $(RUN_ARGS)

test: deps build fmt-check
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: fmt-check
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./checker/ ./register/

cleanup: build
	./$(BIN) cleanup

clean:
	rm -rf bin
