#!/usr/bin/env bash
# 0-ply ranking of rank_once's 48-play Portes contact position (4-2) at this checkout
# and at another one (issue #10: commit 1e8b9d6), side by side in one run: instructions
# (callgrind, load-independent) and time per call (alternating rounds).
#
# Usage: scripts/rank-vs.sh OTHER_CHECKOUT [--rounds N] [--calls N]
#   OTHER_CHECKOUT  a worktree of this repository, e.g. git worktree add /tmp/old 1e8b9d6;
#                   examples/rank_once.rs as of commit 91b3b99 (which uses only what
#                   1e8b9d6 had) is written into it and built there (its own target/,
#                   or OTHER_TARGET_DIR)
#   --rounds N      timing rounds, each running every binary once in turn (default 5)
#   --calls N       calls per timed run (default 20000)
#
# Rows:
#   other        rank_once at OTHER_CHECKOUT with its committed nets
#   this/v1      rank_once here with the net file weights/portes-v1.tnet: the same nets as
#                1e8b9d6, so the same answers (the printed sums must agree with `other`)
#   this         rank_once here with the committed nets (v2 since issue #9)
# Modes: `service` = PositionEvaluator::rank_plays (every play with moves, notation and
# position), `board` = generate + Engine::rank_raw. Time per call is each run's own
# wall-clock measurement after set-up; the ratio is other / this (above 1: faster here).
# Needs cargo, valgrind, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
other="" rounds=5 calls=20000
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --calls) calls="$2"; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) other="$1"; shift ;;
    esac
done
if [ -z "$other" ] || [ ! -f "$other/Cargo.toml" ]; then
    echo "usage: $0 OTHER_CHECKOUT [--rounds N] [--calls N]" >&2
    exit 2
fi
git show 91b3b99:examples/rank_once.rs >"$other/examples/rank_once.rs"
(cd "$other" && CARGO_TARGET_DIR="${OTHER_TARGET_DIR:-$other/target}" \
    cargo build --release --quiet --example rank_once)
cargo build --release --quiet --example rank_once
old="${OTHER_TARGET_DIR:-$other/target}/release/examples/rank_once"
once=target/release/examples/rank_once
nets="target/release/examples/rank_once portes weights/portes-v1.tnet"

cmd() { # NAME -> the command before MODE and N
    case "$1" in
        other) echo "$old" ;;
        this/v1) echo "$nets" ;;
        this) echo "$once" ;;
    esac
}
count() { # NAME MODE -> instructions per call: (N=300 - N=100) / 200
    local c=() n
    for n in 100 300; do
        # shellcheck disable=SC2046 # the command is words on purpose
        c+=("$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $(cmd "$1") "$2" $n 2>&1 |
            awk '/Collected/{gsub(",","",$4); print $4}')")
    done
    echo $(((c[1] - c[0]) / 200))
}

echo "instructions per call (callgrind):"
for mode in service board; do
    for name in other this/v1 this; do
        printf '  %-8s %-8s %s\n' "$mode" "$name" "$(count $name $mode)"
    done
done

echo "time per call, $rounds alternating rounds of $calls calls (µs; sums = answers):"
python3 - "$rounds" "$calls" "$old" "$once" "$nets" <<'EOF'
import re, statistics, subprocess, sys
rounds, calls, old, once, nets = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
cmds = {"other": [old], "this/v1": nets.split(), "this": [once]}
def us(line):
    m = re.search(r"([0-9.]+)(ns|µs|ms) per call \(([^)]*)\)", line)
    v = float(m.group(1)) * {"ns": 1e-3, "µs": 1, "ms": 1e3}[m.group(2)]
    return v, m.group(3)
for mode in ("service", "board"):
    t = {k: [] for k in cmds}
    sums = {}
    for r in range(rounds):
        for k, c in cmds.items():
            out = subprocess.run(c + [mode, calls], capture_output=True, text=True, check=True).stdout
            v, s = us(out)
            t[k].append(v)
            sums[k] = s
    med = {k: statistics.median(v) for k, v in t.items()}
    for k in cmds:
        print(f"  {mode:8} {k:8} median {med[k]:7.2f}  rounds " + " ".join(f"{x:.2f}" for x in t[k]) + f"  sum {sums[k]}")
    print(f"  {mode:8} other/this/v1 = {med['other'] / med['this/v1']:.2f}   other/this = {med['other'] / med['this']:.2f}")
EOF
