# tvsm: see README.md. `make run` starts the service, `make test` runs every test.

GO       ?= go
# Version stamped into the binary (tvsm version); "dev" outside a git checkout.
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
# How long `make fuzz` runs each fuzz target.
FUZZTIME ?= 10s
# Extra arguments for `make run`, e.g. make run ARGS='--http :9090 --log-level debug'.
ARGS     ?=

.PHONY: all run build test esdb-client-tests faults restore-drill powerloss compat bench bench-writes bench-broadcast bench-vs-centrifugo lint fuzz clean console console-check screenshots

all: lint build test

## run: build bin/tvsm (as make build does) and start it on embedded defaults (data under ./data, listening on :8080)
run: build
	./bin/tvsm serve $(ARGS)

## build: build bin/tvsm with the version stamped in
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/tvsm ./cmd/tvsm

# The race detector's runtime sleeps atexit_sleep_ms (default 1000) before a
# race-built process exits, so that late reports get out: a second for every
# test binary and every tvsm process the tests start and stop, about a
# quarter of make test's time. A race is reported when it happens, and fails
# the test it happens in; 50 ms is left for races in goroutines still running
# at exit. A GORACE of your own is read after this one and wins.
TEST_GORACE := atexit_sleep_ms=50

## test: run every test with the race detector; a summary names skipped and slowest tests
test:
	GORACE="$(TEST_GORACE) $$GORACE" GO=$(GO) $(GO) run ./internal/tools/testsummary -race -count=1 ./...

## esdb-client-tests: run EventStore-Client-Go's own integration tests of what the EventStoreDB protocol double serves, against the double
esdb-client-tests:
	GO=$(GO) $(GO) run ./internal/tools/esdbclienttests

# How many times make faults kills the node (SIGKILL) under load.
KILLS ?= 3

## faults: kill the node KILLS times under load, and ClickHouse under load; check nothing acknowledged is lost
faults:
	TVSM_FAULT_KILLS=$(KILLS) $(GO) test -count=1 -run '^TestFaults' -v -timeout 30m ./cmd/tvsm/

## restore-drill: back up a running node, then incrementally, verify the chain, restore it, and check a node started on it (a few seconds)
restore-drill: build
	deploy/restore-drill.sh bin/tvsm

# Power losses of make powerloss (each cycle a different fault), and the
# seed that draws them and what they keep (0: from the clock; a failed
# run prints its seed).
POWERLOSS_CYCLES ?= 5
POWERLOSS_SEED   ?= 0

## powerloss: cut the power under a node POWERLOSS_CYCLES times (its data on a FUSE file system that loses what was not synced; needs /dev/fuse and root); check nothing acknowledged is lost
powerloss: build
	$(GO) run ./internal/tools/powerloss -tvsm bin/tvsm -cycles $(POWERLOSS_CYCLES) -seed $(POWERLOSS_SEED)

# TVIP's Provider API SDK (a directory holding tmsproviderapisdk/), for
# make compat; PYTHON runs it (it needs requests, pytz and pkg_resources).
TVIP_SDK ?=
PYTHON   ?= python3

## compat: run TVIP's own Provider API SDK, unchanged, against a real node
compat:
	@if [ -z "$(TVIP_SDK)" ]; then \
		echo "make compat runs TVIP's Provider API SDK against a tvsm node."; \
		echo "Pass the SDK's directory: make compat TVIP_SDK=../shared/clients/tmsproviderapisdk"; \
		exit 0; \
	fi; \
	TVIP_SDK="$(abspath $(TVIP_SDK))" PYTHON="$(PYTHON)" \
		$(GO) test -count=1 -tags tvipcompat -run TestTVIPSDK -v ./internal/testkit/tvipcompat/

## bench: run every Go benchmark (no tests), then the websocket load tool
bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 90m ./...
	$(MAKE) bench-broadcast

## bench-writes: durable writes from 1 to 256 writers: appends to the store against the disk's raw fsync rate, then account creates and updates over HTTP beside the gin echo
bench-writes:
	$(GO) test -run '^$$' -bench 'Append$$' -benchtime 2s -count 3 ./eventstore/embedded/
	$(GO) test -run '^$$' -bench WriteCurve -benchtime 10000x -count 3 -timeout 30m ./internal/wiring/node/

# Devices, client processes and nodes of bench-broadcast (NODES > 1: on the
# EventStoreDB protocol double), and devices a second starting to connect
# (0: 2,000 per client process). The 100,000-device figure is DEVICES=100000
# PROCS=12 NODES=6 CONNECT_RATE=500. BACKEND=esdb puts one node on the
# double too (the baseline of a cluster); empty: embedded for one node.
# MESSAGES: messages sent, INTERVAL apart; CPU per message is read over
# them all (one broadcast lasts about a tenth of a second).
DEVICES      ?= 10000
MESSAGES     ?= 1
INTERVAL     ?= 500ms
PROCS        ?= 4
NODES        ?= 1
CONNECT_RATE ?= 0
BACKEND      ?=
# SERVER_CPUS and CLIENT_CPUS: CPU lists (taskset's: 0, 0-1) the servers and
# the client processes run on, so that the load tool's work does not share
# the servers' cores; empty: any CPU.
SERVER_CPUS  ?=
CLIENT_CPUS  ?=

## bench-broadcast: a user_message to a provider with DEVICES connected devices in PROCS client processes on NODES nodes
bench-broadcast: build
	./bin/tvsm bench broadcast --devices $(DEVICES) --procs $(PROCS) --nodes $(NODES) --connect-rate $(CONNECT_RATE) --messages $(MESSAGES) --interval $(INTERVAL) $(if $(BACKEND),--backend $(BACKEND)) --server-cpus "$(SERVER_CPUS)" --client-cpus "$(CLIENT_CPUS)" --timeout 60m

# The Centrifugo release bench-vs-centrifugo compares with, built from its
# source through the Go module proxy into CENTRIFUGO_BIN, outside the
# repository (once per version); CENTRIFUGO_BIN=PATH runs a binary of your
# own instead. PAIRS: interleaved pairs of runs (tvsm, then Centrifugo).
# NO_RECEIPTS=1: tvsm's devices acknowledge nothing, as Centrifugo's clients.
CENTRIFUGO_VERSION ?= v6.9.1
CENTRIFUGO_BIN     ?= $(abspath $(shell $(GO) env GOCACHE)/../tvsm-bench/centrifugo-$(CENTRIFUGO_VERSION)/centrifugo)
PAIRS              ?= 3

## bench-vs-centrifugo: the broadcast to DEVICES devices in PROCS client processes on one tvsm node and on Centrifugo, PAIRS interleaved pairs; time, CPU per message (server and clients) and memory per connection, each side and the ratios
# (-X stamps the version, as Centrifugo's releases do.)
bench-vs-centrifugo: build
	@test -x "$(CENTRIFUGO_BIN)" || { \
		echo "building Centrifugo $(CENTRIFUGO_VERSION) into $(CENTRIFUGO_BIN) (a few minutes, once)"; \
		GOBIN="$(dir $(CENTRIFUGO_BIN))" $(GO) install -trimpath \
			-ldflags '-X github.com/centrifugal/centrifugo/v6/internal/build.Version=$(CENTRIFUGO_VERSION:v%=%)' \
			github.com/centrifugal/centrifugo/v6@$(CENTRIFUGO_VERSION); }
	./bin/tvsm bench vs-centrifugo --centrifugo "$(CENTRIFUGO_BIN)" --devices $(DEVICES) --procs $(PROCS) --pairs $(PAIRS) --connect-rate $(CONNECT_RATE) --messages $(MESSAGES) --interval $(INTERVAL) $(if $(NO_RECEIPTS),--no-receipts) --server-cpus "$(SERVER_CPUS)" --client-cpus "$(CLIENT_CPUS)"

## lint: fail on unformatted files, then go vet
lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags tvipcompat ./internal/testkit/tvipcompat/
	$(GO) vet -tags centrifugo ./internal/tools/loadtest/

## fuzz: run each fuzz target for FUZZTIME (go test -fuzz takes one target at a time)
fuzz:
	@set -e; \
	for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -r -n1 dirname | sort -u); do \
		for target in $$($(GO) test -list '^Fuzz' "$$dir" | grep '^Fuzz'); do \
			echo "== $$dir $$target ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) "$$dir"; \
		done; \
	done

## console: rebuild the admin console (web/console) into httpapi/console/dist; needs Node.js and npm
console:
	cd web/console && npm ci --no-audit --no-fund && npm run build

## console-check: fail when the committed console build differs from a fresh build of its sources
console-check: console
	@git diff --exit-code --stat -- httpapi/console/dist || \
		{ echo "httpapi/console/dist is not the build of web/console: run make console and commit it"; exit 1; }
	@untracked="$$(git ls-files --others --exclude-standard -- httpapi/console/dist)"; \
	if [ -n "$$untracked" ]; then echo "new files in httpapi/console/dist: run make console and commit them:"; echo "$$untracked"; exit 1; fi

## screenshots: refresh the console's screenshots in docs/console (headless Chromium)
screenshots:
	rm -rf $(CURDIR)/bin/screenshots
	TVSM_REQUIRE_CHROMIUM=1 TVSM_SCREENSHOT_DIR=$(CURDIR)/bin/screenshots \
		$(GO) test -count=1 -run 'TestConsole' ./httpapi/console/
	mkdir -p docs/console
	cp bin/screenshots/demo-*.png bin/screenshots/receipts.png docs/console/

## clean: remove build output (./data is left alone: it is the service's state)
clean:
	rm -rf bin
