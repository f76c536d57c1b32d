#!/usr/bin/env bash
# A local RelayBell cluster on loopback: 2 api, 2 fanout and 3 pusher
# processes on PostgreSQL, a Kafka-protocol broker process (devkafka, three
# brokers on fixed ports), ClickHouse, and the fake push service in its own
# process.
#
#   deploy/cluster.sh start     build, start everything, wait until ready
#   deploy/cluster.sh stop      stop everything this script started
#   deploy/cluster.sh status    which processes are up
#   deploy/cluster.sh node NAME (re)start one node, e.g. pusher-1
#   deploy/cluster.sh flags NAME print the arguments NAME runs with, one a line
#   deploy/cluster.sh clickhouse start the cluster's ClickHouse again on its
#                               ports (after a kill)
#
# Settings (environment):
#   CLUSTER_DIR         state, logs and pid files (default ./.cluster)
#   BASE_PORT           first port of the block the cluster uses (default 18000)
#   RELAYBELL_POSTGRES  PostgreSQL URL (default the local test database, in
#                       schema relaybell_cluster, created when missing)
#   CLICKHOUSE_ADDR     an already running ClickHouse (native port); without
#                       it one is started under CLUSTER_DIR
#   BIN_DIR             where the binaries are built (default CLUSTER_DIR/bin)
#   FAKEPUSH_ADDR       an already running fake push service (host:port);
#                       without it one is started on B+89
#   NODE_GOMAXPROCS     GOMAXPROCS of each node and of devkafka (default 1:
#                       the seven nodes and the broker share the machine,
#                       and with a P per core each their schedulers spin for
#                       work while the others run; "" keeps Go's default)
#
# Ports from BASE_PORT (B): api B+0..1, fanout B+10..11, pusher B+20..22
# (HTTP) and B+30..32 (batches), gossip B+40.., devkafka B+92..94, fake push
# service B+89. `start` writes CLUSTER_DIR/cluster.env with the addresses.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

DIR=${CLUSTER_DIR:-$ROOT/.cluster}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
B=${BASE_PORT:-18000}
BIN=${BIN_DIR:-$DIR/bin}
PG=${RELAYBELL_POSTGRES:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=relaybell_cluster}
ADMIN_TOKEN=${RELAYBELL_ADMIN_TOKEN:-dev-admin-token}
NODE_GOMAXPROCS=${NODE_GOMAXPROCS-1}
CLUSTER_TOKEN=${RELAYBELL_CLUSTER_TOKEN:-dev-cluster-token}
KAFKA="127.0.0.1:$((B + 92)),127.0.0.1:$((B + 93)),127.0.0.1:$((B + 94))"
FAKEPUSH=${FAKEPUSH_ADDR:-127.0.0.1:$((B + 89))}
SEEDS="127.0.0.1:$((B + 44)),127.0.0.1:$((B + 45)),127.0.0.1:$((B + 46))"
NODES="api-0 api-1 fanout-0 fanout-1 pusher-0 pusher-1 pusher-2"

log() { echo "cluster: $*" >&2; }

# pidof_node NAME prints the pid of a running process started by this script.
pidof_node() {
	local f="$DIR/pids/$1.pid"
	[ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

# launch NAME CMD... starts a background process with its log and pid file.
launch() {
	local name=$1
	shift
	mkdir -p "$DIR/logs" "$DIR/pids"
	setsid "$@" >>"$DIR/logs/$name.log" 2>&1 </dev/null &
	echo $! >"$DIR/pids/$name.pid"
}

wait_http() { # URL [seconds]
	local deadline=$((SECONDS + ${2:-60}))
	until curl -fsS -o /dev/null "$1" 2>/dev/null; do
		if [ $SECONDS -ge $deadline ]; then
			log "$1 did not answer"
			return 1
		fi
		sleep 0.2
	done
}

wait_port() { # PORT [seconds]
	local deadline=$((SECONDS + ${2:-30}))
	until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
		if [ $SECONDS -ge $deadline ]; then
			log "port $1 did not open"
			return 1
		fi
		sleep 0.1
	done
}

clickhouse_addr() {
	if [ -n "${CLICKHOUSE_ADDR:-}" ]; then
		echo "$CLICKHOUSE_ADDR"
	elif [ -f "$DIR/clickhouse.addr" ]; then
		cat "$DIR/clickhouse.addr"
	fi
}

# node_args NAME: the command line of one node. The roles run with the
# settings the Helm chart gives them (deploy/helmtest's
# TestClusterScriptMatchesChart compares the two): the chart's shutdown
# grace per role, ring nodes advertising their address, the bus topics
# replicated on devkafka's three brokers.
node_args() {
	local name=$1 i=${1##*-} http roles grace extra=()
	case $name in
	api-*) http=$((B + i)) roles=api grace=20s ;;
	fanout-*)
		http=$((B + 10 + i)) roles=fanout grace=20s
		extra=(--join "$SEEDS" --gossip "127.0.0.1:$((B + 42 + i))" --advertise 127.0.0.1 --cluster-token "$CLUSTER_TOKEN")
		;;
	pusher-*)
		http=$((B + 20 + i)) roles=pusher grace=50s
		extra=(--join "$SEEDS" --gossip "127.0.0.1:$((B + 44 + i))" --internal "127.0.0.1:$((B + 30 + i))" --advertise 127.0.0.1 --cluster-token "$CLUSTER_TOKEN")
		;;
	*)
		log "unknown node $name (want one of $NODES)"
		return 1
		;;
	esac
	local ch
	ch=$(clickhouse_addr)
	NODE_ARGS=(serve --roles "$roles" --node "$name" --http "127.0.0.1:$http"
		--postgres "$PG" --kafka "$KAFKA" --clickhouse "${ch:-127.0.0.1:$((B + 95))}"
		--admin-token "$ADMIN_TOKEN" --push-allow-hosts "$FAKEPUSH" --data "$DIR/data/$name"
		--kafka-replication-factor 3 --shutdown-grace "$grace" "${extra[@]}")
}

# node NAME: start one node and wait until it is ready.
node() {
	local name=$1 http
	node_args "$name" || return 1
	http=${NODE_ARGS[6]##*:}
	if pid=$(pidof_node "$name"); then
		log "$name already runs (pid $pid)"
		return 0
	fi
	launch "$name" env ${NODE_GOMAXPROCS:+GOMAXPROCS=$NODE_GOMAXPROCS} "$BIN/relaybell" "${NODE_ARGS[@]}" ${RELAYBELL_NODE_FLAGS:-}
	wait_http "http://127.0.0.1:$http/readyz"
}

start() {
	command -v curl >/dev/null || { log "curl is required"; exit 1; }
	mkdir -p "$BIN"
	log "building into $BIN"
	go build -o "$BIN/relaybell" ./cmd/relaybell
	go build -o "$BIN/devkafka" ./cmd/devkafka
	go build -o "$BIN/fakepush" ./cmd/fakepush

	if [ -z "${CLICKHOUSE_ADDR:-}" ] && ! [ -f "$DIR/clickhouse.addr" ]; then
		log "starting ClickHouse"
		# On the cluster's own ports: a free port picked at random could be
		# one of this cluster's nodes', not yet listening.
		addr=$(CLICKHOUSE_TCP_PORT=$((B + 95)) CLICKHOUSE_HTTP_PORT=$((B + 96)) deploy/clickhouse/start.sh "$DIR/clickhouse" | sed -n 's/^CLICKHOUSE_ADDR=//p')
		[ -n "$addr" ] || { log "ClickHouse did not start"; exit 1; }
		echo "$addr" >"$DIR/clickhouse.addr"
	fi
	if ! pidof_node devkafka >/dev/null; then
		launch devkafka env ${NODE_GOMAXPROCS:+GOMAXPROCS=$NODE_GOMAXPROCS} "$BIN/devkafka" -ports "$((B + 92)),$((B + 93)),$((B + 94))"
		wait_port $((B + 92))
	fi
	if [ -z "${FAKEPUSH_ADDR:-}" ] && ! pidof_node fakepush >/dev/null; then
		launch fakepush "$BIN/fakepush" -addr "$FAKEPUSH"
		wait_port $((B + 89))
	fi
	# One node first: it applies the schema migrations the others find done.
	node api-0
	local waits=()
	for n in $NODES; do
		[ "$n" = api-0 ] || { node "$n" & waits+=($!); }
	done
	wait "${waits[@]}"
	for n in $NODES; do
		pidof_node "$n" >/dev/null || { log "$n did not start; see $DIR/logs/$n.log"; exit 1; }
	done
	cat >"$DIR/cluster.env" <<EOF
API_URLS=http://127.0.0.1:$B,http://127.0.0.1:$((B + 1))
FAKEPUSH_URL=http://$FAKEPUSH
KAFKA=$KAFKA
POSTGRES=$PG
CLICKHOUSE=$(clickhouse_addr)
ADMIN_TOKEN=$ADMIN_TOKEN
EOF
	log "up: API on http://127.0.0.1:$B and http://127.0.0.1:$((B + 1)) (admin token $ADMIN_TOKEN), fake push service on http://$FAKEPUSH; logs in $DIR/logs"
}

stop() {
	for n in $NODES fakepush devkafka; do
		if pid=$(pidof_node "$n"); then
			kill "$pid" 2>/dev/null || true
		fi
	done
	for n in $NODES fakepush devkafka; do
		if pid=$(pidof_node "$n"); then
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -9 "$pid" 2>/dev/null || true
		fi
		rm -f "$DIR/pids/$n.pid"
	done
	if [ -f "$DIR/clickhouse.addr" ]; then
		deploy/clickhouse/stop.sh "$DIR/clickhouse" || true
		rm -f "$DIR/clickhouse.addr"
	fi
	log "stopped"
}

# restart_clickhouse: start the cluster's own ClickHouse again, on the ports
# it had, keeping its data.
restart_clickhouse() {
	[ -f "$DIR/clickhouse.addr" ] || { log "this cluster runs no ClickHouse of its own"; exit 1; }
	local tcp http
	tcp=$(sed 's/.*://' "$DIR/clickhouse.addr")
	http=$(sed -n 's|.*<http_port>\([0-9]*\)</http_port>.*|\1|p' "$DIR/clickhouse/config.xml")
	CLICKHOUSE_TCP_PORT=$tcp CLICKHOUSE_HTTP_PORT=$http deploy/clickhouse/start.sh "$DIR/clickhouse" >/dev/null
}

status() {
	for n in devkafka fakepush $NODES; do
		if pid=$(pidof_node "$n"); then echo "$n up (pid $pid)"; else echo "$n down"; fi
	done
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
node) node "${2:?node name}" ;;
flags)
	node_args "${2:?node name}"
	printf '%s\n' "${NODE_ARGS[@]}"
	;;
clickhouse) restart_clickhouse ;;
*)
	sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
