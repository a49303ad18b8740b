# syntax=docker/dockerfile:1
# Harness server image (docs/deploy.md, "Containers"). Build from the
# repository root: docker build -t harness .
#
# The container runs as root on purpose: tools then run as nobody
# (HARNESS_SANDBOX_USER), a user that owns nothing of the server's. The
# sandbox (bubblewrap) needs more than Docker's defaults give; run it with
#   --cap-drop ALL --cap-add SETUID --cap-add SETGID --cap-add SETFCAP
#   --cap-add CHOWN --cap-add DAC_OVERRIDE
#   --security-opt seccomp=unconfined   (Docker's profile refuses the user,
#                                        mount and PID namespaces)
#   --security-opt apparmor=unconfined  (docker-default refuses mount)
#   --security-opt systempaths=unconfined (a new /proc is mounted only
#                                        where /proc is not masked)
# as deploy/compose.yaml does. Without them the server still starts, with
# Landlock alone or no sandbox at all: /api/sandbox and the start log say
# which ("bwrap": true is what you want).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# cgo: the SQLite driver (the default database) is C.
RUN CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/harness ./cmd/web

FROM debian:bookworm-slim
# bubblewrap: the tool sandbox; git: clones into workspaces;
# ca-certificates: the model providers and git over https; ripgrep: the
# grep tool (it falls back to Go without it); curl: the health check.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap git ca-certificates ripgrep curl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/harness /usr/local/bin/harness
ENV HARNESS_DATA_DIR=/var/lib/harness \
    HARNESS_ADDR=0.0.0.0:8080 \
    HARNESS_LOG_FORMAT=json
# The database (SQLite), the secret key file and the workspaces; on
# PostgreSQL the workspaces, shared by every replica.
VOLUME /var/lib/harness
WORKDIR /var/lib/harness
EXPOSE 8080
USER root
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
    CMD curl -fsS -o /dev/null http://127.0.0.1:8080/readyz || exit 1
ENTRYPOINT ["/usr/local/bin/harness"]
