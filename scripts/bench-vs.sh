#!/usr/bin/env bash
# One criterion benchmark of this checkout and of another checkout of this project
# (an older commit, say), run alternately in one run on this machine: the ratio of
# their times is the claim, not either time alone.
#
# Usage: scripts/bench-vs.sh OTHER_CHECKOUT [--bench NAME] [--filter REGEX]
#                            [--rounds N] [--seconds S]
#   OTHER_CHECKOUT  a worktree of this repository at the commit to compare with, e.g.
#                   git worktree add /tmp/old 1e8b9d6
#   --bench NAME    the benches/ target (default eval)
#   --filter REGEX  criterion's benchmark filter (default: every benchmark of NAME);
#                   both checkouts must have benchmarks of the same names
#   --rounds N      rounds, each running the other checkout's binary then this one's
#                   (default 3)
#   --seconds S     criterion's measurement time per benchmark (default 3)
#
# Prints, per benchmark: the other checkout's and this one's median time (criterion's
# middle estimate) in every round, and other/this: above 1 means this checkout is
# faster. Builds both with `cargo bench --no-run` (release profile).
set -euo pipefail

cd "$(dirname "$0")/.."
other=""
bench=eval
filter=""
rounds=3
seconds=3
while [ $# -gt 0 ]; do
    case "$1" in
        --bench) bench="$2"; shift 2 ;;
        --filter) filter="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) other="$1"; shift ;;
    esac
done
[ -n "$other" ] && [ -f "$other/Cargo.toml" ] || {
    echo "usage: $0 OTHER_CHECKOUT [--bench NAME] [--filter REGEX] [--rounds N] [--seconds S]" >&2
    exit 2
}

# The benchmark executable of a checkout.
bench_bin() {
    (cd "$1" && cargo bench --bench "$bench" --no-run --message-format=json 2>/dev/null) |
        python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]:
        print(m["executable"])' | tail -1
}
theirs=$(bench_bin "$other")
ours=$(bench_bin .)
[ -x "$theirs" ] && [ -x "$ours" ] || { echo "could not build both benchmarks" >&2; exit 2; }
echo "other: $other ($(git -C "$other" rev-parse --short HEAD)) $theirs"
echo "this:  $(pwd) ($(git rev-parse --short HEAD)) $ours"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# Criterion's middle estimate per benchmark, in microseconds: "name value".
run() {
    "$1" --bench --noplot --warm-up-time 1 --measurement-time "$seconds" ${filter:+"$filter"} 2>/dev/null |
        awk '
        /^[^ ].*\// && !/time:/ && !/^Benchmarking/ { name = $1 }
        /time:/ {
            if ($1 != "time:") name = $1
            for (i = 1; i <= NF; i++) if ($i ~ /^\[/) { v = $(i + 2); u = $(i + 3); break }
            f = (u == "ns") ? 0.001 : (u == "ms") ? 1000 : (u == "s") ? 1e6 : 1
            printf "%s %.3f\n", name, v * f
        }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
    run "$theirs" > "$tmp/other.$r"
    run "$ours" > "$tmp/this.$r"
done
cat "$tmp"/other.* "$tmp"/this.* | awk '{ print $1 }' | sort -u | while read -r name; do
    line="$name:"
    for r in $(seq 1 "$rounds"); do
        o=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/other.$r")
        t=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/this.$r")
        [ -n "$o" ] && [ -n "$t" ] || continue
        line="$line $(awk -v o="$o" -v t="$t" 'BEGIN { printf "[%.1f / %.1f us = %.2f]", o, t, o / t }')"
    done
    echo "$line"
done
