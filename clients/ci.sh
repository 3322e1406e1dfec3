#!/usr/bin/env bash
# The client examples against a real server, called from .ci/run:
#   1. Python (clients/python: stubs generated from the proto when the package is
#      built, grpcio) and Node.js (clients/node: @grpc/grpc-js + @grpc/proto-loader)
#      over plaintext: both must print the same lines, and those lines the expected
#      answers (clients/expected.txt; the one line that depends on the nets is
#      checked by pattern).
#   2. The same over mutual TLS, with a CA, a server and a client certificate made
#      here by openssl; a client without a certificate must be refused.
#
# Idempotent: the Python packages go into a virtual environment under
# $TAVLI_CI_CACHE (default ~/.cache/tavli-ci), installed only when missing (stock
# Debian refuses pip installs into the system Python); `npm ci` from the committed
# lockfile. Ports: CLIENTS_GRPC_PORT (default 20002) and the next one for TLS,
# CLIENTS_METRICS_PORT (default 9502) and the next one.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GRPC_PORT=${CLIENTS_GRPC_PORT:-20002}
METRICS_PORT=${CLIENTS_METRICS_PORT:-9502}
TLS_PORT=$((GRPC_PORT + 1))
TLS_METRICS_PORT=$((METRICS_PORT + 1))
CACHE=${TAVLI_CI_CACHE:-$HOME/.cache/tavli-ci}
VENV="$CACHE/python-client-venv"
PY_PKGS=(grpcio==1.85.1 grpcio-tools==1.85.1 setuptools==84.2.1)

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
if [ ! -x "$VENV/bin/python" ]; then
    mkdir -p "$CACHE"
    python3 -m venv "$VENV" 2>/dev/null || { log "apt-get install python3-venv"; apt_install python3-venv; python3 -m venv "$VENV"; }
fi
missing=()
for spec in "${PY_PKGS[@]}"; do
    have=$("$VENV/bin/python" -m pip show "${spec%%==*}" 2>/dev/null | sed -n 's/^Version: //p' || true)
    [ "$have" = "${spec#*==}" ] || missing+=("$spec")
done
if [ "${#missing[@]}" -gt 0 ]; then
    log "pip install ${missing[*]} (into $VENV)"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${missing[@]}"
fi
# The package itself every time: its stubs come from this checkout's proto.
log "pip install clients/python (stubs generated from proto/tavli/v1/engine.proto)"
rm -rf clients/python/build
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
    --no-deps --force-reinstall ./clients/python
log "npm ci (clients/node)"
(cd clients/node && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

log "cargo build --release --bin tavli-engine"
cargo build --release --quiet --bin tavli-engine
BIN="$ROOT/target/release/tavli-engine"

# ------------------------------------------------------------------ servers
WORK=$(mktemp -d /tmp/tavli-clients.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

# start NAME PORT METRICS_PORT [flags...]: a server in the background, up when its
# port accepts connections.
start() {
    local name=$1 port=$2 metrics=$3
    shift 3
    RUST_LOG=warn "$BIN" --grpc-addr "127.0.0.1:$port" --metrics-addr "127.0.0.1:$metrics" \
        --drain-seconds 5 "$@" >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do
        kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$WORK/$name.log" >&2; die "$name server exited at start"; }
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            # The port may have answered for another process: ours must still run.
            sleep 0.2
            kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$WORK/$name.log" >&2; die "$name server exited at start"; }
            return 0
        fi
        sleep 0.1
    done
    die "$name server not listening on 127.0.0.1:$port"
}

# stop PID: SIGTERM must end the server with status 0.
stop() {
    local pid=$1 status=0
    kill -TERM "$pid"
    wait "$pid" || status=$?
    [ "$status" = 0 ] || die "server $pid exited with status $status after SIGTERM"
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
ADDR="127.0.0.1:$GRPC_PORT"
"$VENV/bin/tavli-example" --addr "$ADDR" >"$WORK/python.out"
check "python (plaintext)" "$WORK/python.out"
node clients/node/example.js --addr "$ADDR" >"$WORK/node.out"
check "node (plaintext)" "$WORK/node.out"
diff -u "$WORK/python.out" "$WORK/node.out" || die "python and node printed different answers"
stop "${PIDS[0]}"

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
stop "${PIDS[1]}"
log "all passed"
