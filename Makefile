# tvsm: see README.md. `make run` starts the service, `make test` runs every test.

GO       ?= go
# Version stamped into the binary (tvsm version); "dev" outside a git checkout.
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
# How long `make fuzz` runs each fuzz target.
FUZZTIME ?= 10s
# Extra arguments for `make run`, e.g. make run ARGS='--http :9090 --log-level debug'.
ARGS     ?=

.PHONY: all run build test bench bench-writes bench-broadcast lint fuzz clean

all: lint build test

## run: start the service on embedded defaults (data under ./data, listening on :8080)
run:
	$(GO) run -ldflags '$(LDFLAGS)' ./cmd/tvsm serve $(ARGS)

## build: build bin/tvsm with the version stamped in
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/tvsm ./cmd/tvsm

## test: run every test with the race detector
test:
	$(GO) test -race -count=1 ./...

## bench: run every Go benchmark (no tests), then the websocket load tool
bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 90m ./...
	$(MAKE) bench-broadcast

## bench-writes: durable writes from 1 to 256 writers: appends to the store against the disk's raw fsync rate, then account creates and updates over HTTP beside the gin echo
bench-writes:
	$(GO) test -run '^$$' -bench 'Append$$' -benchtime 2s -count 3 ./eventstore/embedded/
	$(GO) test -run '^$$' -bench WriteCurve -benchtime 10000x -count 3 -timeout 30m ./internal/wiring/node/

# Devices and client processes of bench-broadcast.
DEVICES ?= 10000
PROCS   ?= 4

## bench-broadcast: a user_message to a provider with DEVICES connected devices in PROCS client processes
bench-broadcast: build
	./bin/tvsm bench broadcast --devices $(DEVICES) --procs $(PROCS)

## lint: fail on unformatted files, then go vet
lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

## fuzz: run each fuzz target for FUZZTIME (go test -fuzz takes one target at a time)
fuzz:
	@set -e; \
	for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -r -n1 dirname | sort -u); do \
		for target in $$($(GO) test -list '^Fuzz' "$$dir" | grep '^Fuzz'); do \
			echo "== $$dir $$target ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) "$$dir"; \
		done; \
	done

## clean: remove build output (./data is left alone: it is the service's state)
clean:
	rm -rf bin
