#!/usr/bin/env bash
# The attack suite of issue #11 at the issue's scale, against the release server.
#
#   scripts/attack.sh                 # build, then all eight cases (~2.5 min on 2 cores)
#   scripts/attack.sh --case 3 --case 5
#   scripts/attack.sh --bin PATH --old   # a binary from before the limits (no new flags)
#
# Each case starts its own server on ephemeral loopback ports (default settings unless
# the case says otherwise), attacks it as the hostile-client review did, while another
# client calls GetStartingPosition on a new connection every 50 ms and the server's RSS
# is sampled; then SIGTERM. A case passes when every such call answered within 100 ms,
# RSS stayed under 256 MiB (the manifest's limit), the server exited 0 within its drain
# time + 1 s, and the case's own check holds (e.g. no CPU left burning after cancels).
# The figures of every case are printed; exit status 1 if any case failed.
# The cases: examples/attack.rs; the quick versions run in `cargo test --release`
# (tests/attacks.rs). Needs: cargo (nothing else; the hostile clients are Rust).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/target/release/tavli-engine
BUILD=1
ARGS=()
while (($#)); do
  case $1 in
    --case) ARGS+=(--case "$2"); shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --old) ARGS+=(--old); shift ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "attack.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

cd "$ROOT"
if ((BUILD)); then
  cargo build --release --bin tavli-engine --example attack
fi
exec "$ROOT/target/release/examples/attack" --bin "$BIN" "${ARGS[@]}"
