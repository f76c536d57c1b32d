# RelayBell's image: the static relaybell binary on an empty base, run as a
# non-root user, its embedded store in the /data volume.
#
#   make image                         (docker or podman, whichever is here)
#   docker build -t relaybell --build-arg VERSION=v1.2.3 .
#   docker run -p 8080:8080 -v relaybell-data:/data -e RELAYBELL_ADMIN_TOKEN=... relaybell
#
# GO_IMAGE is the build stage's base: the official Go image. A machine that
# cannot pull it may name a local image with the same toolchain (the image
# test, deploy/image_test.sh, does).
ARG GO_IMAGE=golang:1.26

FROM ${GO_IMAGE} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local
# The modules first: this layer is cached while only the sources change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN go build -trimpath -ldflags "-s -w -X github.com/relaybell/relaybell/server.Version=${VERSION}" \
		-o /out/usr/local/bin/relaybell ./cmd/relaybell \
	&& mkdir -p /out/etc/ssl/certs /out/data /out/tmp \
	&& cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ \
	&& echo 'relaybell:x:65532:65532:relaybell:/data:/sbin/nologin' >/out/etc/passwd \
	&& echo 'relaybell:x:65532:' >/out/etc/group \
	&& chown 65532:65532 /out/data && chmod 1777 /out/tmp

FROM scratch
ARG VERSION=dev
LABEL org.opencontainers.image.title="relaybell" \
	org.opencontainers.image.description="RelayBell, a self-hostable web push service" \
	org.opencontainers.image.version="${VERSION}" \
	org.opencontainers.image.source="https://github.com/relaybell/relaybell"
COPY --from=build /out/ /
USER 65532:65532
# The embedded store lives in /data: the root filesystem may be read-only
# (docker run --read-only, readOnlyRootFilesystem) with /data a volume.
ENV RELAYBELL_DATA_DIR=/data RELAYBELL_HTTP_ADDR=:8080
VOLUME /data
WORKDIR /data
# 8080 HTTP (API, SDK, dashboard, /metrics, /readyz, /healthz); 8081 a
# pusher's internal batch port (cluster mode); 7946 gossip (cluster mode).
EXPOSE 8080/tcp 8081/tcp 7946/tcp 7946/udp
ENTRYPOINT ["/usr/local/bin/relaybell"]
CMD ["serve"]
