#!/usr/bin/env bash
# The analysis page in a real browser, called from .ci/run: starts tavli-engine with
# --web-addr and runs web/test/page.test.mjs (node's test runner) with Playwright
# (playwright-core from the npm registry) driving Debian's headless Chromium. Then
# SIGTERM must stop the server with status 0.
#
# Idempotent: apt-get installs chromium only when /usr/bin/chromium is missing
# (`npx playwright install` cannot download a browser here); `npm ci` from the
# committed lockfile. Ports: WEB_CI_GRPC_PORT (default 20001), WEB_CI_METRICS_PORT
# (9501), WEB_CI_WEB_PORT (8501).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GRPC_PORT=${WEB_CI_GRPC_PORT:-20001}
METRICS_PORT=${WEB_CI_METRICS_PORT:-9501}
WEB_PORT=${WEB_CI_WEB_PORT:-8501}

log() { printf 'web: %s\n' "$*"; }
die() { printf 'web: FAIL: %s\n' "$*" >&2; exit 1; }

command -v npm >/dev/null 2>&1 || die "Node.js 20+ and npm are needed (playwright-core)"
if [ ! -x /usr/bin/chromium ]; then
    log "apt-get install chromium"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
log "$(/usr/bin/chromium --version 2>/dev/null || echo 'chromium: no version')"
log "npm ci (web/test: playwright-core)"
(cd web/test && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

log "cargo build --release --bin tavli-engine"
cargo build --release --quiet --bin tavli-engine
BIN="$ROOT/target/release/tavli-engine"

WORK=$(mktemp -d /tmp/tavli-web.XXXXXX)
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

RUST_LOG=warn "$BIN" --grpc-addr "127.0.0.1:$GRPC_PORT" --metrics-addr "127.0.0.1:$METRICS_PORT" \
    --web-addr "127.0.0.1:$WEB_PORT" --drain-seconds 5 >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
up=0
for _ in $(seq 1 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; die "server exited at start"; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$WEB_PORT") 2>/dev/null; then up=1; break; fi
    sleep 0.1
done
# The port may have answered for another process: ours must still be running.
sleep 0.2
kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; die "server exited at start"; }
[ "$up" = 1 ] || die "nothing listens on 127.0.0.1:$WEB_PORT"
log "server up (pid $SERVER_PID), page on http://127.0.0.1:$WEB_PORT/"

status=0
(cd web/test && TAVLI_WEB_URL="http://127.0.0.1:$WEB_PORT" node --test --test-reporter=spec page.test.mjs) || status=$?
if [ "$status" != 0 ]; then
    cat "$WORK/server.log" >&2
    die "page tests (status $status)"
fi

kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || status=$?
SERVER_PID=""
[ "$status" = 0 ] || die "server exited with status $status after SIGTERM"
log "all passed"
