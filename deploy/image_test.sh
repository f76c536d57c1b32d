#!/usr/bin/env bash
# The image test: builds the repository's Dockerfile with podman and runs it
# as the docs say, non-root with a read-only root filesystem and a writable
# /data volume, then checks /readyz and the API through the published port,
# and that the data outlives the container.
#
# These machines cannot pull images: the build stage starts from a local base
# image made with `podman import` of the installed Go toolchain, a module
# cache holding the modules go.mod needs (GOPROXY=off inside), and the few
# tools the build stage's RUN uses; the Dockerfile gets it as GO_IMAGE. The
# base (about 900 MB) stays in podman's storage for the next run. The host's
# Go build cache (IMAGE_TEST_GOCACHE, default `go env GOCACHE`) is mounted
# into the build so a second run compiles only what changed. Without podman
# the test is skipped, except under CI (CI=1 or CI=true), where it fails;
# .ci/run installs podman and runc.
#
#   deploy/image_test.sh          (make test-image)
#
# crun fails on this sandbox's cgroups and limits: podman build and run are
# given runc and the ulimits.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "image_test: $*" >&2; }
fail() {
	say "FAIL: $*"
	echo "image: 0 passed, 1 failed"
	exit 1
}

if ! command -v podman >/dev/null; then
	case ${CI:-} in
	1 | true) fail "podman is not installed (apt-get install podman runc)" ;;
	esac
	say "skipped: podman is not installed (apt-get install podman runc)"
	exit 0
fi

start=$SECONDS
RUN_OPTS=(--runtime runc --ulimit nofile=20000:20000 --ulimit nproc=32768:32768)
IMAGE=localhost/relaybell:imagetest-$$
ADMIN=image-test-admin-token
work=$(mktemp -d)
cid=""
cleanup() {
	if [ -n "$cid" ]; then
		if [ "${ok:-}" != 1 ]; then podman logs "$cid" 2>&1 | tail -n 30 >&2 || true; fi
		podman rm -f "$cid" >/dev/null 2>&1 || true
	fi
	podman rmi -f "$IMAGE" >/dev/null 2>&1 || true
	# The build stage's images, left untagged by the build.
	for id in $(podman images -q -a --filter dangling=true); do
		grep -qx "$id" "$work/dangling-before" 2>/dev/null || podman rmi -f "$id" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# The local base: GOROOT, a module cache, CA certificates and a shell with
# the tools the Dockerfile's RUN uses, with their shared libraries. It is
# kept between runs, named by what it holds (Go's version, go.sum and this
# script): only the first run on a machine makes it (about a minute and a
# half on these machines), or the first after go.sum changes.
key=$( (go version; cat go.sum "$0") | sha256sum | cut -c1-16)
BASE=localhost/relaybell-gobase:$key
if podman image exists "$BASE"; then
	say "reusing $BASE"
else
	say "making the local Go base image $BASE"
	base=$work/base
	goroot=$(go env GOROOT)
	mkdir -p "$base/usr/local" "$base/etc/ssl/certs" "$base/go/pkg/mod" "$base/tmp" "$base/root" "$base/bin"
	cp -al "$goroot" "$base/usr/local/go" 2>/dev/null || cp -a "$goroot" "$base/usr/local/go"
	rm -rf "$base/usr/local/go/test" "$base/usr/local/go/doc" "$base/usr/local/go/api"
	cp /etc/ssl/certs/ca-certificates.crt "$base/etc/ssl/certs/"
	for tool in sh mkdir cp chown chmod; do
		p=$(command -v "$tool")
		for f in "$p" $(ldd "$p" 2>/dev/null | grep -o '/[^ ]*'); do
			mkdir -p "$base$(dirname "$f")"
			cp -L "$f" "$base$f"
		done
		[ -e "$base/bin/$tool" ] || cp -L "$p" "$base/bin/$tool"
	done
	# The modules go.mod needs, taken from this machine's module cache (the
	# module proxy only for what it lacks).
	hostcache=$(go env GOMODCACHE)
	GOMODCACHE=$base/go/pkg/mod GOFLAGS=-mod=mod \
		GOPROXY="file://$hostcache/cache/download,$(go env GOPROXY)" go mod download
	chmod -R u+w "$base/go"
	tar -C "$base" -c . | podman import \
		--change 'ENV PATH=/usr/local/go/bin:/go/bin:/usr/local/bin:/usr/bin:/bin' \
		--change 'ENV GOPATH=/go' --change 'ENV GOPROXY=off' --change 'ENV HOME=/root' \
		--change 'ENV GOCACHE=/root/.cache/go-build' \
		- "$BASE" >/dev/null
	rm -rf "$base"
	# An older base of this test is no longer needed.
	for old in $(podman images --format '{{.Repository}}:{{.Tag}}' localhost/relaybell-gobase); do
		[ "$old" = "$BASE" ] || podman rmi "$old" >/dev/null 2>&1 || true
	done
	say "base made after $((SECONDS - start))s"
fi

say "building the Dockerfile"
podman images -q -a --filter dangling=true >"$work/dangling-before"
gocache=${IMAGE_TEST_GOCACHE:-$(go env GOCACHE)}
mkdir -p "$gocache"
podman build -q "${RUN_OPTS[@]}" --pull=never \
	--volume "$gocache:/root/.cache/go-build" \
	--build-arg GO_IMAGE="$BASE" --build-arg VERSION=v0.0.0-imagetest \
	-t "$IMAGE" -f Dockerfile . >/dev/null || fail "podman build"
say "image built after $((SECONDS - start))s"

# What the image says of itself.
inspect() { podman image inspect --format "$1" "$IMAGE"; }
[ "$(inspect '{{.Config.User}}')" = 65532:65532 ] || fail "image user $(inspect '{{.Config.User}}')"
for p in 8080/tcp 8081/tcp 7946/tcp 7946/udp; do
	inspect '{{range $k, $v := .Config.ExposedPorts}}{{$k}} {{end}}' | grep -qw "$p" || fail "$p not exposed"
done
[ "$(inspect '{{index .Config.Labels "org.opencontainers.image.version"}}')" = v0.0.0-imagetest ] || fail "version label"
inspect '{{index .Config.Labels "org.opencontainers.image.source"}}' | grep -q relaybell || fail "source label"
got=$(podman run --rm "${RUN_OPTS[@]}" "$IMAGE" version) || fail "relaybell version"
[ "$got" = "relaybell v0.0.0-imagetest" ] || fail "relaybell version printed $got"

# Run it as the docs say: a uid of its own, a read-only root, /data a volume.
data=$work/data
mkdir -p "$data"
chown 65532:65532 "$data"
run() {
	cid=$(podman run -d "${RUN_OPTS[@]}" --read-only --user 65532:65532 \
		-v "$data:/data" -p 127.0.0.1::8080 \
		-e RELAYBELL_ADMIN_TOKEN=$ADMIN "$IMAGE") || fail "podman run"
	port=$(podman port "$cid" 8080/tcp | sed 's/.*://')
	[ -n "$port" ] || fail "no published port"
	url=http://127.0.0.1:$port
	for _ in $(seq 150); do
		if curl -fsS -o /dev/null "$url/readyz" 2>/dev/null; then return 0; fi
		[ "$(podman inspect --format '{{.State.Running}}' "$cid")" = true ] || fail "the container stopped"
		sleep 0.2
	done
	fail "$url/readyz did not answer"
}
run
say "ready after $((SECONDS - start))s on $url"
[ "$(podman inspect --format '{{.Config.User}}' "$cid")" = 65532:65532 ] || fail "not run as 65532"

site=$(curl -sS -w '\n%{http_code}' -X POST "$url/admin/v1/websites" -H "Authorization: Bearer $ADMIN" \
	-H 'Content-Type: application/json' -d '{"name":"Image test","url":"https://image.example"}')
[ "$(tail -n1 <<<"$site")" = 201 ] || fail "create website: $site"
key=$(sed -n 's/.*"apiKey": *"\([^"]*\)".*/\1/p' <<<"$site")
[ -n "$key" ] || fail "no apiKey in $site"
list() { curl -sS -w '\n%{http_code}' "$url/api/v1/notifications" -H "Authorization: Bearer $key"; }
got=$(list)
[ "$(tail -n1 <<<"$got")" = 200 ] || fail "list notifications: $got"
grep -q '"items": *\[\]' <<<"$got" || fail "list notifications body: $got"
[ -n "$(ls -A "$data")" ] || fail "nothing written to the /data volume"

# The store is in the volume: a new container on it knows the key.
podman rm -f "$cid" >/dev/null
cid=""
run
got=$(list)
[ "$(tail -n1 <<<"$got")" = 200 ] || fail "after a new container on the same volume: $got"
ok=1
say "passed in $((SECONDS - start))s"
echo "image: 1 passed, 0 failed"
