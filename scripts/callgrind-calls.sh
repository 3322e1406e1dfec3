#!/usr/bin/env bash
# Instructions the server spends per call (user space, valgrind's callgrind: counts,
# not seconds, so independent of the machine's load), for Health/Check, for the
# ListLegalPlays bodies and for the ChoosePlay bodies (the best level; the server runs
# with --max-plies 0 as load.sh's does, so at 0 ply) of scripts/load/corpus.py, sent by
# h2load as scripts/load.sh sends them (-c 4 -m 16). One server under callgrind; before each phase its counters
# are zeroed and after it dumped (callgrind_control), so start-up is not counted.
#
#   scripts/callgrind-calls.sh [--bin PATH] [--detail full|compact] [--repeat N]
#                              [--out DIR] [--port P]
#
#   --bin     the server (default target/release/tavli-engine; build it first)
#   --detail  the ListLegalPlays bodies' detail (default compact)
#   --repeat  calls per ListLegalPlays body (default 100: 3,600 calls for the 36
#             bodies); Health/Check calls and ChoosePlay calls (spread over its 12
#             bodies) = the same total
#   --port    the gRPC port (default 52010; the metrics port is PORT+1)
#
# Prints instructions per call of each phase and their ratio. Profiles are kept in
# DIR (default target/callgrind/<time>) for callgrind_annotate. Needs valgrind,
# h2load, python3, curl. Run the server with RUST_LOG=warn as load.sh's figures do.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/target/release/tavli-engine
DETAIL=compact
REPEAT=100
PORT=52010
OUT=
while (($#)); do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --detail) DETAIL=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "callgrind-calls.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$ROOT/target/callgrind/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
MPORT=$((PORT + 1))
python3 "$ROOT/scripts/load/corpus.py" --bin "$BIN" --out "$OUT/corpus" --seed 2026 \
  --detail "$DETAIL" >/dev/null 2>&1

RUST_LOG=warn TAVLI_GRPC_ADDR=127.0.0.1:$PORT TAVLI_METRICS_ADDR=127.0.0.1:$MPORT TAVLI_MAX_PLIES=0 \
  valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out.%p" "$BIN" \
  >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
for i in $(seq 1 600); do
  curl -fs "http://127.0.0.1:$MPORT/metrics" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || { tail -5 "$OUT/server.log" >&2; exit 2; }
  ((i < 600)) || { echo "callgrind-calls.sh: no server after 60 s" >&2; exit 2; }
  sleep 0.1
done

URL=http://127.0.0.1:$PORT
send() { # body path n
  h2load -n "$3" -c 4 -m 16 -t 1 -d "$1" -H 'content-type: application/grpc' \
    -H 'te: trailers' "$URL$2" | grep -E '^requests:' | grep -q ' 0 failed, 0 errored' \
    || { echo "callgrind-calls.sh: h2load failed on $1" >&2; exit 2; }
}
llp=("$OUT"/corpus/llp-*.bin)
choose=("$OUT"/corpus/choose-*.bin)
total=$((REPEAT * ${#llp[@]}))
per_choose=$((total / ${#choose[@]}))
# Warm-up: every body once, so that lazy set-up is not in the phases.
send "$OUT/corpus/health.bin" /grpc.health.v1.Health/Check 64
for b in "${llp[@]}"; do send "$b" /tavli.v1.TavliEngine/ListLegalPlays 4; done
for b in "${choose[@]}"; do send "$b" /tavli.v1.TavliEngine/ChoosePlay 4; done

phase() { # name
  callgrind_control -z $SERVER >/dev/null 2>&1
  case $1 in
    health) send "$OUT/corpus/health.bin" /grpc.health.v1.Health/Check "$total" ;;
    llp) for b in "${llp[@]}"; do send "$b" /tavli.v1.TavliEngine/ListLegalPlays "$REPEAT"; done ;;
    choose) for b in "${choose[@]}"; do send "$b" /tavli.v1.TavliEngine/ChoosePlay "$per_choose"; done ;;
  esac
  callgrind_control -d "$1" $SERVER >/dev/null 2>&1
}
phase health
phase llp
phase choose
# The dumps (one file each): the total of each phase.
ir() {
  local f
  for f in "$OUT"/callgrind.out.$SERVER.*; do
    if grep -q "^desc: Trigger: dump $1\$" "$f"; then
      grep -m1 '^summary:' "$f" | awk '{print $2}'
      return
    fi
  done
  echo "callgrind-calls.sh: no dump of phase $1" >&2
  exit 2
}
# Every call answered OK (h2load sees only HTTP 200; the server counts gRPC codes).
bad=$(curl -fs "http://127.0.0.1:$MPORT/metrics" | grep '^grpc_server_handled_total' \
  | grep -v 'grpc_code="OK"' | awk '$2 != 0' || true)
[[ -z $bad ]] || { echo "callgrind-calls.sh: calls not OK:" >&2; echo "$bad" >&2; exit 2; }
h=$(ir health)
l=$(ir llp)
c=$(ir choose)
nc=$((per_choose * ${#choose[@]}))
echo "binary $BIN ($(sha256sum "$BIN" | cut -c1-12)), detail $DETAIL, $total calls per phase ($nc ChoosePlay)"
awk -v h="$h" -v l="$l" -v c="$c" -v n="$total" -v nc="$nc" 'BEGIN {
  printf "Health/Check:   %d instructions per call\n", h / n
  printf "ListLegalPlays: %d instructions per call\n", l / n
  printf "ratio:          %.2f\n", l / h
  printf "ChoosePlay:     %d instructions per call (best level, 0 ply)\n", c / nc
  printf "ratio:          %.2f\n", (c / nc) / (h / n) }'
echo "profiles: $OUT"
