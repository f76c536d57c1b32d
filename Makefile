# RelayBell: the two commands a newcomer needs are `make run` and `make test`.
GO ?= go
BIN ?= bin/relaybell
RELAYBELL_ADMIN_TOKEN ?= dev-admin-token
export RELAYBELL_ADMIN_TOKEN

.PHONY: run build test test-short bench bench-events bench-timers bench-micro lint fuzz clean cluster cluster-stop

## run: serve every role in one process on the embedded default (./relaybell-data, :8080); the mails' links point at http://localhost:8080 unless RELAYBELL_PUBLIC_URL says otherwise
run: build
	RELAYBELL_PUBLIC_URL=$${RELAYBELL_PUBLIC_URL:-http://localhost:8080} ./$(BIN) serve

## build: compile the relaybell binary into bin/
build:
	$(GO) build -o $(BIN) ./cmd/relaybell

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

## test-short: the fast subset
test-short:
	$(GO) test -short -count=1 ./...

## bench: broadcasts from POST to the last push on the embedded default and the local cluster, against the bare sender (AUDIENCE=10000,100000,1000000 for all sizes; ROUNDS=N for the median of N broadcasts, default 3)
AUDIENCE ?= 10000,100000
MODES ?= embedded,cluster
ROUNDS ?= 3
bench: build
	$(GO) build -o bin/fakepush ./cmd/fakepush
	./$(BIN) bench --modes $(MODES) --audience $(AUDIENCE) --rounds $(ROUNDS)

## bench-events: the highest rate of POST /api/v1/events with p99 under 20 ms, open-loop load at rising rates on the embedded default and the local cluster, with the CPU per request of each process (EVENT_RATES=100,200,400 to choose the steps; REGISTRATIONS=1 for browsers' registrations, POST /subscriptions, p99 under 50 ms)
EVENT_RATES ?=
REGISTRATIONS ?=
bench-events: build
	$(GO) build -o bin/fakepush ./cmd/fakepush
	./$(BIN) bench --events --modes $(MODES)$(if $(EVENT_RATES), --event-rates $(EVENT_RATES))$(if $(REGISTRATIONS), --registrations --event-p99 50ms)

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
	$(GO) test -run '^$$' -fuzz FuzzDecodeEvents -fuzztime 30s ./analytics/
	$(GO) test -run '^$$' -fuzz FuzzDecodeBatch -fuzztime 30s ./pusher/
	$(GO) test -run '^$$' -fuzz FuzzFoldSearch -fuzztime 30s ./store/
	$(GO) test -run '^$$' -fuzz FuzzDecodeJSON -fuzztime 30s ./api/
	$(GO) test -run '^$$' -fuzz FuzzTakeMember -fuzztime 30s ./api/
	$(GO) test -run '^$$' -fuzz FuzzParseHash -fuzztime 30s ./accounts/
	$(GO) test -run '^$$' -fuzz FuzzTrackInput -fuzztime 30s ./events/
	$(GO) test -run '^$$' -fuzz FuzzRobustness -fuzztime 3m ./api/

clean:
	rm -rf bin relaybell-data
