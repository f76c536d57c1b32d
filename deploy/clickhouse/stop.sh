#!/usr/bin/env bash
# stop.sh DIR: stop the server start.sh started for DIR (SIGTERM, then SIGKILL
# after CLICKHOUSE_STOP_TIMEOUT seconds, default 10). DIR itself is kept.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
pidfile="$1/clickhouse.pid"
if [ ! -f "$pidfile" ]; then
	echo "stop.sh: no server recorded in $1" >&2
	exit 0
fi
pid=$(cat "$pidfile")
if kill -TERM "$pid" 2>/dev/null; then
	for _ in $(seq $(( ${CLICKHOUSE_STOP_TIMEOUT:-10} * 50 ))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "stop.sh: pid $pid ignored SIGTERM; killing" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
fi
rm -f "$pidfile"
