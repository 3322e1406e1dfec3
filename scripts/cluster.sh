#!/usr/bin/env bash
# Several tavli-engine replicas behind a balancing client, and behind haproxy, on
# loopback (issue #34; docs/deploy.md, "Scaling out"). Called from .ci/run.
#
#   scripts/cluster.sh                 # about 80 s after the build
#   scripts/cluster.sh --logs DIR      # keep the replicas' and haproxy's logs
#   scripts/cluster.sh --help          # the driver's options (ports, phase lengths)
#
# Replicas of the release binary on 127.0.0.2-.5, a DNS server on 127.0.0.1 standing in
# for a Kubernetes headless Service, client processes using the Python client's
# channel (clients/python: the service config deploy/grpc-service-config.json), and
# haproxy with deploy/proxy/haproxy.cfg: scripts/cluster.py says what is checked. It
# prints the spread of the calls over the replicas, the share of the replica started
# mid-run and the failed calls, and exits non-zero when a check fails.
#
# Ports (all on loopback): gRPC 22051 on every replica, /metrics 22091, DNS 22053,
# haproxy 127.0.0.6:22051 (cluster.py's options change them).
#
# Idempotent; needs root only to install what is missing: the Python client in a
# virtual environment under $TAVLI_CI_CACHE (default ~/.cache/tavli-ci;
# scripts/lib/python.sh) with pinned dnslib and grpcio-health-checking from PyPI, and
# haproxy from Debian (apt-get). Bounded: the driver stops itself after 170 s, and
# `timeout` ends it at 180 s.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CACHE=${TAVLI_CI_CACHE:-$HOME/.cache/tavli-ci}
VENV="$CACHE/python-client-venv"
EXTRA_PKGS=(dnslib==0.9.26 grpcio-health-checking==1.85.1)
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh
# shellcheck source=scripts/lib/python.sh
. scripts/lib/python.sh

log() { printf 'cluster: %s\n' "$*"; }

# ------------------------------------------------------------------ tools
python_client_venv "$VENV" | sed 's/^/cluster: /'
python_venv_pins "$VENV" "${EXTRA_PKGS[@]}" | sed 's/^/cluster: /'
if ! command -v haproxy >/dev/null 2>&1; then
    log "apt-get install haproxy"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy >/dev/null
fi
log "$(haproxy -v | head -n1)"

log "cargo build --release --bin tavli-engine"
server_build

# ------------------------------------------------------------------ run
exec timeout --kill-after=5 180 "$VENV/bin/python" scripts/cluster.py --bin "$TAVLI_BIN" \
    --haproxy "$(command -v haproxy)" "$@"
