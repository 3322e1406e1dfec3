#!/usr/bin/env bash
# The client examples against a real server, called from .ci/run:
#   1. Python (clients/python: stubs generated from the proto when the package is
#      built, grpcio) and Node.js (clients/node: @grpc/grpc-js + @grpc/proto-loader)
#      over plaintext: both must print the same lines, and those lines the expected
#      answers (clients/expected.txt; the one line that depends on the nets is
#      checked by pattern).
#   2. The same over mutual TLS, with a CA, a server and a client certificate made
#      here by openssl; a client without a certificate must be refused.
#   3. Split rollouts over two more servers: the Python helper's merged answers equal
#      one server's byte for byte (clients/python/tests), and `tavli-rollout`
#      (Python), `tavli-engine rollout --replicas` and the local `tavli-engine
#      rollout` print the same line.
#
# Idempotent: the Python client in a virtual environment under $TAVLI_CI_CACHE
# (default ~/.cache/tavli-ci; scripts/lib/python.sh); `npm ci` from the committed
# lockfile; the servers by scripts/lib/server.sh. Ports: CLIENTS_GRPC_PORT (default
# 20002), the next one for TLS and the two after it for the split rollouts;
# CLIENTS_METRICS_PORT (default 9502) and the next three.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GRPC_PORT=${CLIENTS_GRPC_PORT:-20002}
METRICS_PORT=${CLIENTS_METRICS_PORT:-9502}
TLS_PORT=$((GRPC_PORT + 1))
TLS_METRICS_PORT=$((METRICS_PORT + 1))
CACHE=${TAVLI_CI_CACHE:-$HOME/.cache/tavli-ci}
VENV="$CACHE/python-client-venv"
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh
# shellcheck source=scripts/lib/python.sh
. scripts/lib/python.sh

log() { printf 'clients: %s\n' "$*"; }
die() { printf 'clients: FAIL: %s\n' "$*" >&2; exit 1; }

apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# ------------------------------------------------------------------ tools
command -v openssl >/dev/null 2>&1 || { log "apt-get install openssl"; apt_install openssl; }
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    log "apt-get install nodejs npm"
    apt_install nodejs npm
fi
python_client_venv "$VENV" | sed 's/^/clients: /'
log "npm ci (clients/node)"
(cd clients/node && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

log "cargo build --release --bin tavli-engine"
server_build

# ------------------------------------------------------------------ servers
WORK=$(mktemp -d /tmp/tavli-clients.XXXXXX)
SERVER_LOGS=$WORK
trap 'server_cleanup; rm -rf "$WORK"' EXIT

# start NAME PORT METRICS_PORT [flags...]: a server on loopback (SERVER_PID).
start() {
    local name=$1 port=$2 metrics=$3
    shift 3
    server_start "$name" "$port" --grpc-addr "127.0.0.1:$port" --metrics-addr "127.0.0.1:$metrics" \
        --drain-seconds 5 "$@"
}

# check NAME FILE: the expected lines, and the nets' line by pattern.
NET_LINE='^Evaluate 6-5, 0 plies: net-portes-v[0-9]+, equity [+-][0-9]\.[0-9]{3}, 7 plays ranked, best [0-9a-z/ *()]+ \([+-][0-9]\.[0-9]{3}\)$'
check() {
    local name=$1 out=$2
    grep -Eq "$NET_LINE" "$out" || { cat "$out" >&2; die "$name: no line matching $NET_LINE"; }
    grep -Ev "$NET_LINE" "$out" >"$out.fixed"
    diff -u clients/expected.txt "$out.fixed" || die "$name: output differs from clients/expected.txt"
    log "$name: ok ($(wc -l <"$out") lines as expected)"
}

# ------------------------------------------------------------------ plaintext
start plain "$GRPC_PORT" "$METRICS_PORT"
PLAIN_PID=$SERVER_PID
ADDR="127.0.0.1:$GRPC_PORT"
"$VENV/bin/tavli-example" --addr "$ADDR" >"$WORK/python.out"
check "python (plaintext)" "$WORK/python.out"
node clients/node/example.js --addr "$ADDR" >"$WORK/node.out"
check "node (plaintext)" "$WORK/node.out"
diff -u "$WORK/python.out" "$WORK/node.out" || die "python and node printed different answers"
server_stop "$PLAIN_PID"

# ------------------------------------------------------------------ split rollouts
SPLIT_A=$((GRPC_PORT + 2))
SPLIT_B=$((GRPC_PORT + 3))
start split-a "$SPLIT_A" "$((METRICS_PORT + 2))"
SPLIT_A_PID=$SERVER_PID
start split-b "$SPLIT_B" "$((METRICS_PORT + 3))"
SPLIT_B_PID=$SERVER_PID
REPLICAS="127.0.0.1:$SPLIT_A,127.0.0.1:$SPLIT_B"
log "split rollouts over $REPLICAS (clients/python/tests)"
TAVLI_REPLICAS=$REPLICAS "$VENV/bin/python" -m unittest discover -s clients/python/tests 2>&1 |
    sed 's/^/clients: /'
SPLIT_ARGS=(--position "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5" --trials 50 --dice 6-5 --truncation 9)
"$VENV/bin/tavli-rollout" --replicas "$REPLICAS" "${SPLIT_ARGS[@]}" >"$WORK/split-python.out"
"$TAVLI_BIN" rollout --replicas "$REPLICAS" "${SPLIT_ARGS[@]}" >"$WORK/split-rust.out" 2>/dev/null
"$TAVLI_BIN" rollout "${SPLIT_ARGS[@]}" >"$WORK/local.out"
diff -u "$WORK/local.out" "$WORK/split-python.out" || die "tavli-rollout (Python) differs from the local rollout"
diff -u "$WORK/local.out" "$WORK/split-rust.out" || die "rollout --replicas differs from the local rollout"
log "split rollouts: ok ($(tail -1 "$WORK/local.out" | cut -c1-40)...: Python, --replicas and local the same)"
server_stop "$SPLIT_A_PID"
server_stop "$SPLIT_B_PID"

# ------------------------------------------------------------------ mutual TLS
log "certificates (openssl): a CA, a server certificate for localhost, a client certificate"
cd "$WORK"
ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ec ca.key
openssl req -x509 -new -key ca.key -days 2 -subj "/CN=tavli-ci CA" -out ca.pem \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
leaf() { # NAME CN EXTENSIONS
    ec "$1.key"
    openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr" 2>/dev/null
    printf '%s\n' "$3" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
leaf server localhost $'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE'
leaf client tavli-ci-client $'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE'
cd "$ROOT"
start mtls "$TLS_PORT" "$TLS_METRICS_PORT" \
    --tls-cert "$WORK/server.pem" --tls-key "$WORK/server.key" --tls-client-ca "$WORK/ca.pem"
MTLS_PID=$SERVER_PID
TLS_ARGS=(--addr "localhost:$TLS_PORT" --ca "$WORK/ca.pem" --cert "$WORK/client.pem" --key "$WORK/client.key")
"$VENV/bin/tavli-example" "${TLS_ARGS[@]}" >"$WORK/python-tls.out"
check "python (mutual TLS)" "$WORK/python-tls.out"
node clients/node/example.js "${TLS_ARGS[@]}" >"$WORK/node-tls.out"
check "node (mutual TLS)" "$WORK/node-tls.out"
if "$VENV/bin/tavli-example" --addr "localhost:$TLS_PORT" --ca "$WORK/ca.pem" >"$WORK/nocert.out" 2>&1; then
    die "a client without a certificate was served under mutual TLS"
fi
grep -q "StatusCode.UNAVAILABLE" "$WORK/nocert.out" || { cat "$WORK/nocert.out" >&2; die "no UNAVAILABLE for a client without a certificate"; }
log "python without a client certificate: refused (UNAVAILABLE)"
server_stop "$MTLS_PID"
log "all passed"
