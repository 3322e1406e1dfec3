#!/usr/bin/env bash
# The analysis page in a real browser, called from .ci/run: starts tavli-engine with
# --web-addr and runs web/test/page.test.mjs (node's test runner) with Playwright
# (playwright-core from the npm registry) driving Debian's headless Chromium. Then
# SIGTERM must stop the server with status 0.
#
# Idempotent: apt-get installs chromium only when /usr/bin/chromium is missing
# (`npx playwright install` cannot download a browser here); `npm ci` from the
# committed lockfile; the server by scripts/lib/server.sh. Ports: WEB_CI_GRPC_PORT (default 20001), WEB_CI_METRICS_PORT
# (9501), WEB_CI_WEB_PORT (8501).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GRPC_PORT=${WEB_CI_GRPC_PORT:-20001}
METRICS_PORT=${WEB_CI_METRICS_PORT:-9501}
WEB_PORT=${WEB_CI_WEB_PORT:-8501}

log() { printf 'web: %s\n' "$*"; }
die() { printf 'web: FAIL: %s\n' "$*" >&2; exit 1; }
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh

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
server_build

WORK=$(mktemp -d /tmp/tavli-web.XXXXXX)
SERVER_LOGS=$WORK
trap 'server_cleanup; rm -rf "$WORK"' EXIT

server_start web "$WEB_PORT" --grpc-addr "127.0.0.1:$GRPC_PORT" --metrics-addr "127.0.0.1:$METRICS_PORT" \
    --web-addr "127.0.0.1:$WEB_PORT" --drain-seconds 5
log "server up (pid $SERVER_PID), page on http://127.0.0.1:$WEB_PORT/"

status=0
(cd web/test && TAVLI_WEB_URL="http://127.0.0.1:$WEB_PORT" node --test --test-reporter=spec page.test.mjs) || status=$?
if [ "$status" != 0 ]; then
    server_show_log web
    die "page tests (status $status)"
fi

server_stop "$SERVER_PID"
log "all passed"
