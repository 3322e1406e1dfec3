#!/usr/bin/env bash
# Runs examples/python/play_match.py against the real server: builds tavli-engine,
# starts it on loopback, plays a 3-point Tavli match with engine-chosen plays, writes
# its record and analyses it over gRPC (the client checks that the server's text form
# of the match is the record it wrote and that every turn was analysed), then stops
# the server (SIGTERM, exit 0).
#
# Idempotent: a virtualenv in target/py-venv (python3-venv from apt when missing)
# with grpcio and grpcio-tools from PyPI.
#   PYCLIENT_GRPC_PORT (default 20010), PYCLIENT_METRICS_PORT (default 9610).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
GRPC_PORT=${PYCLIENT_GRPC_PORT:-20010}
METRICS_PORT=${PYCLIENT_METRICS_PORT:-9610}
VENV="$ROOT/target/py-venv"
GRPC_VERSION=1.85.1

log() { printf 'python-client: %s\n' "$*"; }
die() { printf 'python-client: FAIL: %s\n' "$*" >&2; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
    if ! python3 -m venv "$VENV" 2>/dev/null; then
        log "apt-get install python3-venv"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        rm -rf "$VENV"
        python3 -m venv "$VENV"
    fi
fi
if ! "$VENV/bin/python" -c "import grpc, grpc_tools" 2>/dev/null; then
    log "pip install grpcio==$GRPC_VERSION grpcio-tools==$GRPC_VERSION"
    "$VENV/bin/pip" install -q --disable-pip-version-check \
        "grpcio==$GRPC_VERSION" "grpcio-tools==$GRPC_VERSION"
fi

log "cargo build --release --bin tavli-engine"
cargo build --release --quiet --bin tavli-engine

WORK=$(mktemp -d /tmp/tavli-pyclient.XXXXXX)
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

TAVLI_GRPC_ADDR="127.0.0.1:$GRPC_PORT" TAVLI_METRICS_ADDR="127.0.0.1:$METRICS_PORT" \
    TAVLI_DRAIN_SECONDS=5 RUST_LOG=warn "$ROOT/target/release/tavli-engine" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
log "server pid $SERVER_PID on 127.0.0.1:$GRPC_PORT"

start=$(date +%s)
if ! "$VENV/bin/python" examples/python/play_match.py --addr "127.0.0.1:$GRPC_PORT" \
    --length 3 --seed 7 --policy engine --out "$WORK/match.mat" --plies 1 | tee "$WORK/client.log"; then
    cat "$WORK/server.log" >&2
    die "play_match.py failed"
fi
grep -q '^analysed [0-9]* turns at 1 plies$' "$WORK/client.log" || die "no analysis line"
grep -q '^ Game 1 Portes opening [1-6]-[1-6]$' "$WORK/match.mat" || die "record without its first game line"
log "match played and analysed in $(( $(date +%s) - start )) s"

kill -TERM "$SERVER_PID"
rc=0
for _ in $(seq 1 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
wait "$SERVER_PID" || rc=$?
SERVER_PID=""
[ "$rc" = 0 ] || { cat "$WORK/server.log" >&2; die "server exited with $rc after SIGTERM"; }
log "ok"
