# RelayBell: the two commands a newcomer needs are `make run` and `make test`.
GO ?= go
BIN ?= bin/relaybell
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/relaybell/relaybell/server.Version=$(VERSION)
# The container engine of make image: podman or docker, whichever is here.
ENGINE ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
IMAGE ?= relaybell:$(VERSION)
RELAYBELL_ADMIN_TOKEN ?= dev-admin-token
export RELAYBELL_ADMIN_TOKEN

.PHONY: run build image test test-image test-chart test-short bench bench-events bench-api bench-timers bench-micro lint fuzz clean cluster cluster-stop

## run: serve every role in one process on the embedded default (./relaybell-data, :8080); the mails' links point at http://localhost:8080 unless RELAYBELL_PUBLIC_URL says otherwise
run: build
	RELAYBELL_PUBLIC_URL=$${RELAYBELL_PUBLIC_URL:-http://localhost:8080} ./$(BIN) serve

## build: compile the relaybell binary into bin/
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/relaybell

## image: the container image from the Dockerfile (IMAGE=relaybell:<version>; ENGINE=docker or podman; IMAGE_FLAGS for more, e.g. --build-arg GO_IMAGE=...)
IMAGE_FLAGS ?=
image:
	$(ENGINE) build $(IMAGE_FLAGS) --build-arg VERSION=$(VERSION) -t $(IMAGE) .

## cluster: a local cluster on loopback (2 api, 2 fanout, 3 pushers, PostgreSQL, devkafka, ClickHouse); see deploy/cluster.sh
cluster:
	deploy/cluster.sh start

## cluster-stop: stop the local cluster
cluster-stop:
	deploy/cluster.sh stop

## test: the whole suite, with the race detector on the packages that are concurrent
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -race -count=1 -timeout 30m ./bus/ ./fanout/ ./pusher/ ./server/ ./api/ ./webhooks/...
	RELAYBELL_TEST_STORE=postgres $(GO) test -count=1 -timeout 20m ./api/ ./webhooks/
	$(MAKE) test-image
	$(MAKE) test-chart

## test-chart: the Helm chart rendered and linted by the real Helm (its own Go module, deploy/helmtest)
test-chart:
	cd deploy/helmtest && $(GO) vet ./... && $(GO) test -count=1 ./...

## test-image: build the Dockerfile with podman and run the image read-only as a non-root user (skipped without podman, except under CI)
test-image:
	deploy/image_test.sh

## test-short: the fast subset
test-short:
	$(GO) test -short -count=1 ./...

## bench: the peers (the floor of the crypto, the bare sender, webpush-go, Node's web-push from bench/node) sending the same pushes, then broadcasts from POST to the last push on the embedded default and the local cluster, against the bare sender; a table of all and a summary line (AUDIENCE=10000,100000,1000000 for all sizes; ROUNDS=N for the median of N broadcasts, default 3)
AUDIENCE ?= 10000,100000
MODES ?= embedded,cluster
ROUNDS ?= 3
bench: build
	$(GO) build -o bin/fakepush ./cmd/fakepush
	@if command -v npm >/dev/null; then (cd bench/node && npm ci --no-audit --no-fund --loglevel=error) || echo "bench: npm ci in bench/node failed: node-web-push will be n/a" >&2; \
	else echo "bench: npm is not installed: node-web-push will be n/a" >&2; fi
	./$(BIN) bench --modes $(MODES) --audience $(AUDIENCE) --rounds $(ROUNDS)

## bench-events: the highest rate of POST /api/v1/events with p99 under 20 ms, then of browsers' registrations (POST /subscriptions) with p99 under 50 ms, open-loop load at rising rates on the embedded default and the local cluster, with the CPU per request of each process (EVENT_RATES=100,200,400 to choose the steps of both; REGISTRATIONS=0 for the events alone, REGISTRATIONS=1 for the registrations alone)
EVENT_RATES ?=
REGISTRATIONS ?=
bench-events: build
	$(GO) build -o bin/fakepush ./cmd/fakepush
	$(if $(filter 1,$(REGISTRATIONS)),,./$(BIN) bench --events --modes $(MODES)$(if $(EVENT_RATES), --event-rates $(EVENT_RATES)))
	$(if $(filter 0,$(REGISTRATIONS)),,./$(BIN) bench --events --modes $(MODES)$(if $(EVENT_RATES), --event-rates $(EVENT_RATES)) --registrations --event-p99 50ms)

## bench-api: the REST routes (POST /subscriptions, POST /events, POST /notifications to one externalId, GET /notifications, the browsers' delivery receipts) and the transactional path (POST to the push, across 100 websites) under open-loop load from vegeta at rising rates, on the embedded default and the local cluster: p50/p99/p99.9, the highest rate with p99 under 50 ms (100 ms for the push), CPU per request (API_RATES=100,200,... and API_SEND_RATES=5,10,... to choose the steps; API_ROUTES=subscribe,events,notify,list,ping,send)
bench-api: build
	$(GO) build -o bin/fakepush ./cmd/fakepush
	./$(BIN) bench --api --modes $(MODES)$(if $(API_RATES), --api-rates $(API_RATES))$(if $(API_SEND_RATES), --api-send-rates $(API_SEND_RATES))$(if $(API_ROUTES), --api-routes $(API_ROUTES))

## bench-timers: the automations engine with 1,000,000 runs waiting against 10,000, on the embedded default and the local cluster: engine memory, lateness of due messages, store CPU per message (TIMERS_WAITING=N, TIMERS_DUE=N to choose; TIMERS_JOURNEYS=1 for journey enrolments)
TIMERS_WAITING ?= 1000000
TIMERS_DUE ?= 10000
bench-timers: build
	$(GO) build -o bin/fakepush ./cmd/fakepush
	./$(BIN) bench --timers --modes $(MODES) --timers-waiting $(TIMERS_WAITING) --timers-due $(TIMERS_DUE)$(if $(TIMERS_JOURNEYS), --timers-journeys)

## bench-micro: encrypt-and-sign per push (ours against webpush-go), the stores' hot paths, the filter engine, the batch wire, the pusher against bare sends
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./webpush/ ./store/sqlite/ ./filter/ ./pusher/

## lint: formatting and vet
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...

## fuzz: a short run of every fuzz target, and a longer randomized run of the API robustness suite
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./filter/
	$(GO) test -run '^$$' -fuzz FuzzParseSubscription -fuzztime 30s ./webpush/
	$(GO) test -run '^$$' -fuzz FuzzDecodeCursor -fuzztime 30s ./audience/
	$(GO) test -run '^$$' -fuzz FuzzParseHeader -fuzztime 30s ./webhooks/signature/
	$(GO) test -run '^$$' -fuzz FuzzVerify -fuzztime 30s ./webhooks/signature/
	$(GO) test -run '^$$' -fuzz FuzzVerify -fuzztime 30s ./client/
	$(GO) test -run '^$$' -fuzz FuzzDecodeEvents -fuzztime 30s ./analytics/
	$(GO) test -run '^$$' -fuzz FuzzDecodeBatch -fuzztime 30s ./pusher/
	$(GO) test -run '^$$' -fuzz FuzzFoldSearch -fuzztime 30s ./store/
	$(GO) test -run '^$$' -fuzz FuzzDecodeJSON -fuzztime 30s ./api/
	$(GO) test -run '^$$' -fuzz FuzzTakeMember -fuzztime 30s ./api/
	$(GO) test -run '^$$' -fuzz FuzzParseHash -fuzztime 30s ./accounts/
	$(GO) test -run '^$$' -fuzz FuzzTrackInput -fuzztime 30s ./events/
	$(GO) test -run '^$$' -fuzz FuzzProcess -fuzztime 30s ./uploads/
	$(GO) test -run '^$$' -fuzz FuzzParseAnswer -fuzztime 30s ./suggestions/
	$(GO) test -run '^$$' -fuzz FuzzRules -fuzztime 30s ./suggestions/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./feeds/
	$(GO) test -run '^$$' -fuzz FuzzExpand -fuzztime 30s ./feeds/
	$(GO) test -run '^$$' -fuzz FuzzServeH2 -fuzztime 30s ./webpush/webpushtest/
	$(GO) test -run '^$$' -fuzz FuzzRobustness -fuzztime 3m ./api/

clean:
	rm -rf bin relaybell-data
