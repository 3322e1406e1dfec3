#!/usr/bin/env bash
# Move generation side by side with a peer generator (wildbg), in one run, on the same
# inputs: the 1000 contact and 1000 race Portes positions of tests/data/portes-gnubg/
# x 21 rolls.
#
# Usage: scripts/movegen-vs-wildbg.sh PEER_HARNESS [--rounds N] [--passes P] [--no-build]
#
# PEER_HARNESS is an executable that implements the harness protocol of
# docs/performance.md ("Side by side with wildbg"), as this project's
# examples/movegen_harness.rs does:
#   HARNESS setup  FILE        decode the positions and stop
#   HARNESS once   FILE        every position x the 21 rolls once
#   HARNESS counts FILE        the same, one line per call: its number of results
#   HARNESS time   FILE P      P passes over the calls; prints "calls C ns T"
# FILE holds GNU Backgammon Position IDs, one a line, the side on roll first; the rolls
# are 1-1, 2-1, 2-2, 3-1, ... 6-6 for each position in turn.
#
# The peer's harness is not part of this repository and nothing here builds it (see
# docs/performance.md for why and for what was measured).
#
# What it prints, per set:
#   1. whether both harnesses give the same number of resulting positions on every
#      one of the 21,000 calls (the script fails if not);
#   2. instructions per call, valgrind --tool=callgrind, the `setup` run subtracted
#      (independent of machine load), and the ratio peer / ours;
#   3. calls per second, N rounds alternating ours and the peer's (P passes each), the
#      total over the rounds and the ratio ours / peer (min-max over rounds).
set -euo pipefail

cd "$(dirname "$0")/.."
peer=""
rounds=5
passes=20
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --passes) passes="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) peer="$1"; shift ;;
    esac
done
if [ -z "$peer" ] || [ ! -x "$peer" ]; then
    echo "usage: $0 PEER_HARNESS [--rounds N] [--passes P] [--no-build]" >&2
    echo "PEER_HARNESS must be an executable implementing the protocol above" >&2
    exit 2
fi
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 2; }
if [ "$build" = 1 ]; then
    cargo build --release --example movegen_harness >&2
fi
ours=target/release/examples/movegen_harness
[ -x "$ours" ] || { echo "$ours missing: run without --no-build" >&2; exit 2; }

# Instructions of one run, as callgrind counts them.
instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 |
        awk '/Collected/ { gsub(",", "", $4); print $4 }'
}

echo "ours: $ours ($(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
echo "peer: $peer"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
for set in contact race; do
    file="tests/data/portes-gnubg/$set-positions.txt"
    echo
    echo "== $set: $(grep -c . "$file") positions x 21 rolls"
    # 1. Result counts, call by call.
    if cmp -s <("$ours" counts "$file") <("$peer" counts "$file"); then
        calls=$("$ours" counts "$file" | wc -l)
        results=$("$ours" counts "$file" | awk '{ s += $1 } END { print s }')
        echo "result counts: identical on all $calls calls ($results resulting positions)"
    else
        echo "result counts: DIFFER; first differences (line: ours | peer):"
        diff <("$ours" counts "$file") <("$peer" counts "$file") | head -5
        status=1
        continue
    fi
    # 2. Instructions per call.
    o_once=$(instructions "$ours" once "$file")
    o_setup=$(instructions "$ours" setup "$file")
    p_once=$(instructions "$peer" once "$file")
    p_setup=$(instructions "$peer" setup "$file")
    awk -v o=$((o_once - o_setup)) -v p=$((p_once - p_setup)) -v n="$calls" 'BEGIN {
        printf "instructions per call: ours %d, peer %d, peer/ours %.2f\n", o / n, p / n, p / o }'
    # 3. Calls per second, alternating rounds.
    tally=""
    for r in $(seq 1 "$rounds"); do
        o=$("$ours" time "$file" "$passes")
        p=$("$peer" time "$file" "$passes")
        tally="$tally$o $p"$'\n'
    done
    printf '%s' "$tally" | awk -v rounds="$rounds" -v passes="$passes" '
        { oc += $2; on += $4; pc += $6; pn += $8
          r = ($2 / $4) / ($6 / $8)
          if (NR == 1 || r < lo) lo = r
          if (NR == 1 || r > hi) hi = r }
        END {
          printf "calls per second (%d alternating rounds of %d passes): ours %.2f M, peer %.2f M, ours/peer %.2f (rounds %.2f-%.2f)\n",
                 rounds, passes, oc / on * 1000, pc / pn * 1000, (oc / on) / (pc / pn), lo, hi }'
done
exit $status
