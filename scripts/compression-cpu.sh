#!/usr/bin/env bash
# Server CPU per ListLegalPlays call with responses gzip-compressed and without, in
# one run: two servers from the same binary (--compress-responses true / false), the
# same grpcio client (it lists gzip in grpc-accept-encoding, as grpcio does by
# default), alternating rounds of 500 calls; CPU = utime + stime of each server from
# /proc. The figure is docs/performance.md, "Response compression".
#
# Needs the Python client of clients/python in the venv that clients/ci.sh makes
# (VENV, default ~/.cache/tavli-ci/python-client-venv). Ports 55010/55011, 9510/9511.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-${TAVLI_CI_CACHE:-$HOME/.cache/tavli-ci}/python-client-venv}
[ -x "$VENV/bin/tavli-example" ] || { echo "run clients/ci.sh first (no client in $VENV)" >&2; exit 1; }
cd "$ROOT"
cargo build --release --quiet --bin tavli-engine
BIN=target/release/tavli-engine
RUST_LOG=warn "$BIN" --grpc-addr 127.0.0.1:55010 --metrics-addr 127.0.0.1:9510 --compress-responses true &
ON=$!
RUST_LOG=warn "$BIN" --grpc-addr 127.0.0.1:55011 --metrics-addr 127.0.0.1:9511 --compress-responses false &
OFF=$!
trap 'kill $ON $OFF 2>/dev/null || true' EXIT
sleep 2
"$VENV/bin/python" - "$ON" "$OFF" <<'PYEOF'
import os, sys, grpc
from tavli.v1 import engine_pb2 as pb, engine_pb2_grpc as rpc
pids = {"gzip": int(sys.argv[1]), "plain": int(sys.argv[2])}
stubs = {"gzip": rpc.TavliEngineStub(grpc.insecure_channel("127.0.0.1:55010")),
         "plain": rpc.TavliEngineStub(grpc.insecure_channel("127.0.0.1:55011"))}
tick = os.sysconf("SC_CLK_TCK")
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick
req = pb.ListLegalPlaysRequest(position_id="portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5",
                               dice=pb.Dice(die1=2, die2=2))
size = len(stubs["plain"].ListLegalPlays(req).SerializeToString())
total, calls = {"gzip": 0.0, "plain": 0.0}, 0
for rnd in range(10):
    for k in (("gzip", "plain") if rnd % 2 == 0 else ("plain", "gzip")):
        c0 = cpu(pids[k])
        for _ in range(500):
            stubs[k].ListLegalPlays(req)
        total[k] += cpu(pids[k]) - c0
    calls += 500
print(f"ListLegalPlays, Portes start 2-2, full detail: response {size} bytes; {calls} calls each")
for k in total:
    print(f"  {k:5}: {total[k] / calls * 1e6:.0f} us server CPU per call")
print(f"  ratio gzip / plain: {total['gzip'] / total['plain']:.2f}")
PYEOF
