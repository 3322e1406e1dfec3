#!/usr/bin/env bash
# Load test of the tavli-engine gRPC server (loopback only), with h2load.
#
#   scripts/load.sh                  # ~90 s + build: Health baseline vs ListLegalPlays and
#                                    #   ChoosePlay (best level, 0 ply), the mix
#                                    #   at saturation, then at 80 % of it (p99)
#   scripts/load.sh --soak 600       # 10 min at saturation: zero failed calls, RSS flat
#   scripts/load.sh --no-build --keep-logs --out /tmp/load
#   RUST_LOG=warn scripts/load.sh    # the server without its per-call info log line
#
# The server: `cargo build --release` (unless --no-build), then target/release/tavli-engine
# on 127.0.0.1:$GRPC_PORT (gRPC) and 127.0.0.1:$METRICS_PORT (/metrics), defaults 20571 and
# 19571, stopped with SIGTERM at the end. Requests: pre-encoded gRPC bodies from positions
# of seeded random-play games of Portes, Plakoto and Fevga (scripts/load/corpus.py, via the
# server's CLI). The judge of success is the server's grpc_server_handled_total before and
# after every phase (h2load cannot read grpc-status): the run fails (exit 1) if any call was
# not OK; missed performance targets are printed as MISS but do not fail it.
# Evaluate is part of the mix (plies 0, ranking the roll's plays) only when the server
# answers it; while it answers UNIMPLEMENTED that is reported and it is left out.
#
# Options: --soak SECONDS, --seconds S (one phase, default 6), --rounds N (baseline, 3),
#   --clients C / --streams M (h2load -c / -m, default 4 x 16 = 64 calls in flight, under
#   the server's concurrency limit of 256), --mix L:A:E (ListLegalPlays:ApplyPlay:Evaluate
#   request weights, default 60:30:10), --no-build, --bin PATH, --out DIR
#   (default target/load/<time>), --keep-logs (h2load per-request logs), --seed N,
#   --detail compact (the ListLegalPlays bodies ask for PLAY_DETAIL_COMPACT; the baseline
#   ratio's target is then 0.75 of Health/Check, else 0.6: issue #10),
#   --nice N (server and h2load under `nice -n N`; negative N, as root, is a diagnostic
#   that shows the service with less interference from the rest of a shared machine),
#   --pin (the server on CPU 0, the driver and h2load on the other CPUs, with taskset:
#   the load generator does not compete with the service for its core; needs 2+ CPUs).
# Needs: cargo, python3 (standard library only), curl, h2load (Debian nghttp2-client:
#   installed with apt-get when missing, which needs root).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GRPC_PORT=${GRPC_PORT:-20571}
METRICS_PORT=${METRICS_PORT:-19571}
BIN=$ROOT/target/release/tavli-engine
BUILD=1
OUT=
SEED=2026
DETAIL=full
KEEP=0
NICE=()
PIN=0
DRIVE=()
while (($#)); do
  case $1 in
    --soak) DRIVE+=(--soak "$2"); shift 2 ;;
    --seconds|--rounds|--clients|--streams|--mix|--sample-every) DRIVE+=("$1" "$2"); shift 2 ;;
    --keep-logs) DRIVE+=("$1"); KEEP=1; shift ;;
    --no-build) BUILD=0; shift ;;
    --bin) BIN=$2; BUILD=0; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --detail) DETAIL=$2; shift 2 ;;
    --nice) NICE=(nice -n "$2"); shift 2 ;;
    --pin) PIN=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "load.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$ROOT/target/load/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

if ! command -v h2load >/dev/null; then
  echo "load.sh: installing h2load (nghttp2-client)"
  apt-get install -y -qq nghttp2-client >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq nghttp2-client >/dev/null; }
fi
for t in python3 curl h2load; do
  command -v $t >/dev/null || { echo "load.sh: $t is missing" >&2; exit 2; }
done

if ((BUILD)); then
  (cd "$ROOT" && cargo build --release --bin tavli-engine)
fi
[[ -x $BIN ]] || { echo "load.sh: no server binary at $BIN" >&2; exit 2; }

echo "load.sh: $(uptime | sed 's/^ *//')"
echo "load.sh: server $BIN ($(stat -c %y "$BIN" | cut -d. -f1), sha256 $(sha256sum "$BIN" | cut -c1-12)), repo at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" status --porcelain -- src Cargo.toml 2>/dev/null | grep -q . && echo ' + uncommitted src changes')"
echo "load.sh: results in $OUT"
# Issue #10's targets for ListLegalPlays against Health/Check: 0.6 full, 0.75 compact.
case $DETAIL in compact) RATIO_TARGET=0.75 ;; *) RATIO_TARGET=0.6 ;; esac
python3 "$ROOT/scripts/load/corpus.py" --bin "$BIN" --out "$OUT/corpus" --seed "$SEED" --detail "$DETAIL"

# --pin: the server on CPU 0, everything else on the rest.
SERVER_CPUS=()
DRIVER_CPUS=()
if ((PIN)); then
  NCPU=$(nproc)
  ((NCPU >= 2)) || { echo "load.sh: --pin needs 2 or more CPUs, this machine has $NCPU" >&2; exit 2; }
  SERVER_CPUS=(taskset -c 0)
  DRIVER_CPUS=(taskset -c "1-$((NCPU - 1))")
  echo "load.sh: pinned: the server on CPU 0, the driver and h2load on CPUs 1-$((NCPU - 1))"
fi

# The server, ours alone: started here, stopped by pid. --max-plies 0: every body
# searches 0 ply (Evaluate's ask for it), and ChoosePlay's best level is answered at
# 0 ply, on the async worker (its own depth, 2 plies, is a deep search).
TAVLI_GRPC_ADDR=127.0.0.1:$GRPC_PORT TAVLI_METRICS_ADDR=127.0.0.1:$METRICS_PORT TAVLI_MAX_PLIES=0 \
  "${NICE[@]}" "${SERVER_CPUS[@]}" "$BIN" >"$OUT/server.log" 2>&1 &
SERVER=$!
stop_server() {
  if kill -0 "$SERVER" 2>/dev/null; then
    kill -TERM "$SERVER"
    for _ in $(seq 1 150); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$SERVER" 2>/dev/null && kill -KILL "$SERVER"
  fi
  wait "$SERVER" 2>/dev/null || true
}
trap stop_server EXIT
for i in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$METRICS_PORT/metrics" >/dev/null && break
  kill -0 "$SERVER" 2>/dev/null || { echo "load.sh: the server exited:" >&2; tail -5 "$OUT/server.log" >&2; exit 2; }
  ((i < 100)) || { echo "load.sh: the server did not answer /metrics in 10 s" >&2; exit 2; }
  sleep 0.1
done

rc=0
"${NICE[@]}" "${DRIVER_CPUS[@]}" python3 "$ROOT/scripts/load/drive.py" --url "http://127.0.0.1:$GRPC_PORT" \
  --metrics "http://127.0.0.1:$METRICS_PORT/metrics" --corpus "$OUT/corpus" --out "$OUT" \
  --ratio-target "$RATIO_TARGET" "${DRIVE[@]}" | tee "$OUT/report.txt" || rc=$?
stop_server
trap - EXIT
echo "load.sh: server log: $(wc -l <"$OUT/server.log") lines, $(du -h "$OUT/server.log" | cut -f1)"
if ((!KEEP)); then  # one info line per call: keep its start and end only
  { head -n 5 "$OUT/server.log"; echo "[... load.sh: cut, --keep-logs keeps it whole ...]"; tail -n 5 "$OUT/server.log"; } >"$OUT/server.log.cut"
  mv "$OUT/server.log.cut" "$OUT/server.log"
fi
exit $rc
