#!/usr/bin/env bash
# The API contract checked with buf (from the npm registry, .ci/buf), called from
# .ci/run:
#   buf lint                      STANDARD rules (exceptions in proto/buf.yaml, with
#                                 the reason)
#   buf format -d --exit-code     the canonical layout
#   buf breaking                  against the last release tag (v*) if there is one,
#                                 else the previous commit (HEAD~1: on main, main's
#                                 previous commit); BUF_AGAINST=<git ref> overrides.
#                                 Skipped, with a message, when that commit does not
#                                 exist (first commit, shallow clone) or has no proto.
#                                 A baseline from before proto/buf.yaml existed is
#                                 checked for wire and JSON compatibility only
#                                 (WIRE_JSON): the FILE rules would flag the
#                                 generated-code options that the contract added.
# Idempotent: `npm ci` only when buf is missing or not the locked version.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TOOLS="$ROOT/.ci/buf"
BUF="$TOOLS/node_modules/.bin/buf"
WANT=$(sed -n 's/.*"@bufbuild\/buf": "\([^"]*\)".*/\1/p' "$TOOLS/package.json")

log() { printf 'proto: %s\n' "$*"; }
die() { printf 'proto: FAIL: %s\n' "$*" >&2; exit 1; }

command -v npm >/dev/null 2>&1 || die "npm (Node.js) is needed to install buf from the npm registry"
if [ ! -x "$BUF" ] || [ "$("$BUF" --version 2>/dev/null)" != "$WANT" ]; then
    log "npm ci (@bufbuild/buf $WANT)"
    (cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
log "buf $("$BUF" --version)"

cd "$ROOT/proto"
"$BUF" lint || die "buf lint"
log "buf lint: ok (STANDARD)"
"$BUF" format -d --exit-code || die "buf format: run '.ci/buf/node_modules/.bin/buf format -w' in proto/"
log "buf format: ok"

cd "$ROOT"
against=${BUF_AGAINST:-}
if [ -z "$against" ]; then
    against=$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null || true)
    [ -n "$against" ] || against=HEAD~1
fi
if ! git rev-parse --verify -q "$against^{commit}" >/dev/null; then
    log "buf breaking: skipped: no commit $against to compare with (first commit or shallow clone)"
    exit 0
fi
if [ -z "$(git ls-tree -r --name-only "$against" -- proto/tavli)" ]; then
    log "buf breaking: skipped: $against has no proto/tavli"
    exit 0
fi
BASE=$(mktemp -d /tmp/tavli-buf.XXXXXX)
trap 'rm -rf "$BASE"' EXIT
git archive "$against" proto | tar -x -C "$BASE"
cd "$ROOT/proto"
desc="$against ($(git rev-parse --short "$against"))"
if [ -f "$BASE/proto/buf.yaml" ]; then
    "$BUF" breaking --against "$BASE/proto" || die "buf breaking against $desc"
    log "buf breaking against $desc: ok (FILE)"
else
    # The baseline predates proto/buf.yaml: its file has no options to compare.
    "$BUF" breaking --against "$BASE/proto" \
        --config '{"version":"v2","breaking":{"use":["WIRE_JSON"]}}' \
        || die "buf breaking (WIRE_JSON) against $desc"
    log "buf breaking against $desc: ok (WIRE_JSON: the baseline predates proto/buf.yaml)"
fi
