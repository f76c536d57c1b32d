# RelayBell: the two commands a newcomer needs are `make run` and `make test`.
GO ?= go
BIN ?= bin/relaybell
RELAYBELL_ADMIN_TOKEN ?= dev-admin-token
export RELAYBELL_ADMIN_TOKEN

.PHONY: run build test test-short bench lint fuzz clean cluster cluster-stop

## run: serve every role in one process on the embedded default (./relaybell-data, :8080)
run: build
	./$(BIN) serve

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
	$(GO) test -race -count=1 -timeout 20m ./bus/ ./fanout/ ./pusher/ ./server/ ./api/

## test-short: the fast subset
test-short:
	$(GO) test -short -count=1 ./...

## bench: encrypt-and-sign per push, the project's webpush against webpush-go, and the store's hot paths
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./webpush/ ./store/sqlite/ ./filter/

## lint: formatting and vet
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...

## fuzz: a short run of every fuzz target
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./filter/
	$(GO) test -run '^$$' -fuzz FuzzParseSubscription -fuzztime 30s ./webpush/

clean:
	rm -rf bin relaybell-data
