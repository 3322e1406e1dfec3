#!/usr/bin/env bash
# Runs examples/python/play_match.py against the real server: builds tavli-engine,
# starts it on loopback, plays a 3-point Tavli match with engine-chosen plays, writes
# its record and analyses it over gRPC (the client checks that the server's text form
# of the match is the record it wrote and that every turn was analysed), then stops
# the server (SIGTERM, exit 0).
#
# Idempotent: the Python client package (clients/python) in the virtual environment
# that clients/ci.sh uses, under $TAVLI_CI_CACHE (default ~/.cache/tavli-ci;
# scripts/lib/python.sh); the server by scripts/lib/server.sh.
#   PYCLIENT_GRPC_PORT (default 20010), PYCLIENT_METRICS_PORT (default 9610).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
GRPC_PORT=${PYCLIENT_GRPC_PORT:-20010}
METRICS_PORT=${PYCLIENT_METRICS_PORT:-9610}
VENV="${TAVLI_CI_CACHE:-$HOME/.cache/tavli-ci}/python-client-venv"

log() { printf 'python-client: %s\n' "$*"; }
die() { printf 'python-client: FAIL: %s\n' "$*" >&2; exit 1; }
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh
# shellcheck source=scripts/lib/python.sh
. scripts/lib/python.sh

python_client_venv "$VENV" | sed 's/^/python-client: /'
log "cargo build --release --bin tavli-engine"
server_build

WORK=$(mktemp -d /tmp/tavli-pyclient.XXXXXX)
SERVER_LOGS=$WORK
trap 'server_cleanup; rm -rf "$WORK"' EXIT

server_start server "$GRPC_PORT" --grpc-addr "127.0.0.1:$GRPC_PORT" \
    --metrics-addr "127.0.0.1:$METRICS_PORT" --drain-seconds 5
log "server pid $SERVER_PID on 127.0.0.1:$GRPC_PORT"

start=$(date +%s)
if ! "$VENV/bin/python" examples/python/play_match.py --addr "127.0.0.1:$GRPC_PORT" \
    --length 3 --seed 7 --policy engine --out "$WORK/match.mat" --plies 1 | tee "$WORK/client.log"; then
    server_show_log server
    die "play_match.py failed"
fi
grep -q '^analysed [0-9]* turns at 1 plies$' "$WORK/client.log" || die "no analysis line"
grep -q '^ Game 1 Portes opening [1-6]-[1-6]$' "$WORK/match.mat" || die "record without its first game line"
log "match played and analysed in $(( $(date +%s) - start )) s"

server_stop "$SERVER_PID"
log "ok"
