#!/usr/bin/env bash
# start.sh DIR: run a throwaway single-node ClickHouse with everything under DIR.
#
# Writes DIR/config.xml and DIR/users.xml from the templates beside this
# script (data, logs and tmp under DIR, listen_host 127.0.0.1), starts
# clickhouse-server in the background, waits until the native and HTTP ports
# answer, and prints:
#
#   CLICKHOUSE_ADDR=127.0.0.1:<tcp_port>    (native protocol, for clickhouse-go)
#   CLICKHOUSE_HTTP_ADDR=127.0.0.1:<http_port>
#   CLICKHOUSE_PID=<pid>
#
# Environment:
#   CLICKHOUSE_TCP_PORT, CLICKHOUSE_HTTP_PORT  fixed ports (default: free ports picked here)
#   CLICKHOUSE_SERVER                          server binary (default: clickhouse-server on PATH or /usr/sbin)
#   CLICKHOUSE_START_TIMEOUT                   seconds to wait for the server (default 30)
#   CLICKHOUSE_WATCH_PID                       stop the server when this process ends
#                                              (tests pass their own pid, so a killed
#                                              test run leaves no server behind)
#
# If the server is not installed it is installed with apt-get when running as
# root; otherwise the script fails and says how to install it.
# Stop the server with stop.sh DIR.
set -euo pipefail

usage() { echo "usage: $0 DIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$1"
dir=$(cd "$1" && pwd)
timeout=${CLICKHOUSE_START_TIMEOUT:-30}

find_server() {
	if [ -n "${CLICKHOUSE_SERVER:-}" ]; then
		echo "$CLICKHOUSE_SERVER"
	elif command -v clickhouse-server >/dev/null 2>&1; then
		command -v clickhouse-server
	elif [ -x /usr/sbin/clickhouse-server ]; then
		echo /usr/sbin/clickhouse-server
	fi
}

bin=$(find_server)
if [ -z "$bin" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "start.sh: clickhouse-server is not installed; install it as root with" >&2
		echo "  apt-get update && apt-get install -y clickhouse-server" >&2
		echo "or set CLICKHOUSE_SERVER to the server binary" >&2
		exit 1
	fi
	echo "start.sh: installing clickhouse-server with apt-get" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq clickhouse-server >&2
	bin=$(find_server)
	[ -n "$bin" ] || { echo "start.sh: clickhouse-server still missing after apt-get install" >&2; exit 1; }
fi
[ -x "$bin" ] || { echo "start.sh: $bin is not executable" >&2; exit 1; }

if [ -f "$dir/clickhouse.pid" ] && kill -0 "$(cat "$dir/clickhouse.pid")" 2>/dev/null; then
	echo "start.sh: a server already runs for $dir (pid $(cat "$dir/clickhouse.pid")); run stop.sh $dir first" >&2
	exit 1
fi

# listening PORT: whether something accepts connections on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port: a port nothing listens on. The server may still lose a race for
# it; the start loop below then tries other ports.
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 40000))
		if ! listening "$p"; then echo "$p"; return; fi
	done
	echo "start.sh: no free port found" >&2
	exit 1
}

# owns PID PORT: whether PORT is served by process PID (not by some other
# server that held the port first). Without ss, trust the pre-start check.
owns() {
	command -v ss >/dev/null 2>&1 || return 0
	ss -ltnpH "sport = :$2" 2>/dev/null | grep -q "pid=$1,"
}

# ping PORT: whether the HTTP interface answers "Ok." on /ping.
ping() {
	local reply
	reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET /ping HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
		timeout 2 cat <&3) 2>/dev/null) || return 1
	[[ $reply == *"Ok."* ]]
}

mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas" "$dir/log"
start=$(date +%s%N)
attempts=1
[ -n "${CLICKHOUSE_TCP_PORT:-}${CLICKHOUSE_HTTP_PORT:-}" ] || attempts=5
for attempt in $(seq "$attempts"); do
	tcp_port=${CLICKHOUSE_TCP_PORT:-$(free_port)}
	http_port=${CLICKHOUSE_HTTP_PORT:-$(free_port)}
	while [ "$http_port" = "$tcp_port" ]; do http_port=$(free_port); done
	for p in "$tcp_port" "$http_port"; do
		if listening "$p"; then
			echo "start.sh: port $p on 127.0.0.1 is already taken" >&2
			exit 1
		fi
	done
	sed -e "s|@DIR@|$dir|g" -e "s|@TCP_PORT@|$tcp_port|g" -e "s|@HTTP_PORT@|$http_port|g" \
		"$here/config.xml.tmpl" >"$dir/config.xml"
	cp "$here/users.xml.tmpl" "$dir/users.xml"

	# setsid: the server outlives the caller's process group (go test, make).
	(cd "$dir" && exec setsid "$bin" --config-file="$dir/config.xml" \
		</dev/null >>"$dir/log/stdout.log" 2>&1) &
	pid=$!
	echo "$pid" >"$dir/clickhouse.pid"

	deadline=$(( $(date +%s) + timeout ))
	while kill -0 "$pid" 2>/dev/null; do
		if ping "$http_port" && listening "$tcp_port" && owns "$pid" "$tcp_port"; then
			ms=$(( ($(date +%s%N) - start) / 1000000 ))
			if [ -n "${CLICKHOUSE_WATCH_PID:-}" ]; then
				watch=$CLICKHOUSE_WATCH_PID
				(exec setsid bash -c 'while kill -0 "$0" 2>/dev/null && kill -0 "$1" 2>/dev/null; do sleep 0.5; done
					kill -TERM "$1" 2>/dev/null' "$watch" "$pid" </dev/null >/dev/null 2>&1) &
			fi
			echo "start.sh: clickhouse-server ready in ${ms} ms (pid $pid, data $dir)" >&2
			echo "CLICKHOUSE_ADDR=127.0.0.1:$tcp_port"
			echo "CLICKHOUSE_HTTP_ADDR=127.0.0.1:$http_port"
			echo "CLICKHOUSE_PID=$pid"
			exit 0
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "start.sh: clickhouse-server did not answer within ${timeout}s; see $dir/log" >&2
			kill -KILL "$pid" 2>/dev/null || true
			rm -f "$dir/clickhouse.pid"
			exit 1
		fi
		sleep 0.02
	done
	wait "$pid" 2>/dev/null || true
	rm -f "$dir/clickhouse.pid"
	echo "start.sh: clickhouse-server exited during start (attempt $attempt, ports $tcp_port/$http_port)" >&2
done
echo "start.sh: clickhouse-server failed to start; last lines of $dir/log:" >&2
tail -n 20 "$dir/log/clickhouse-server.err.log" "$dir/log/stdout.log" >&2 2>/dev/null || true
exit 1
