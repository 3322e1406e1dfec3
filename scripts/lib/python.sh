# shellcheck shell=bash
# The Python client for a CI script: a virtual environment with pinned grpcio,
# grpcio-tools and setuptools from PyPI, and the package clients/python (its
# tavli.v1 stubs generated from this checkout's proto/tavli/v1/engine.proto), built
# anew every time. Sourced by clients/ci.sh, examples/python/ci.sh and
# scripts/cluster.sh:
#
#   . "$ROOT/scripts/lib/python.sh"
#   python_client_venv "$VENV"      # then "$VENV/bin/python", "$VENV/bin/tavli-example"
#   python_venv_pins "$VENV" dnslib==0.9.26   # more pinned packages (scripts/cluster.sh)
#
# Idempotent: the packages are installed only when missing or of another version;
# python3-venv from apt when `python3 -m venv` is missing (stock Debian refuses pip
# installs into the system Python).

PY_CLIENT_PKGS=(grpcio==1.85.1 grpcio-tools==1.85.1 setuptools==84.2.1)

# python_venv_pins VENV NAME==VERSION...: pip installs into VENV those of the pinned
# packages that are missing or of another version.
python_venv_pins() {
    local venv=$1 spec have missing=()
    shift
    for spec in "$@"; do
        have=$("$venv/bin/python" -m pip show "${spec%%==*}" 2>/dev/null | sed -n 's/^Version: //p' || true)
        [ "$have" = "${spec#*==}" ] || missing+=("$spec")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "pip install ${missing[*]} (into $venv)"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check "${missing[@]}"
    fi
}

# python_client_venv VENV
python_client_venv() {
    local venv=$1 root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    if [ ! -x "$venv/bin/python" ]; then
        mkdir -p "$(dirname "$venv")"
        if ! python3 -m venv "$venv" 2>/dev/null; then
            echo "apt-get install python3-venv"
            DEBIAN_FRONTEND=noninteractive apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
            rm -rf "$venv"
            python3 -m venv "$venv"
        fi
    fi
    python_venv_pins "$venv" "${PY_CLIENT_PKGS[@]}"
    # The package itself every time: its stubs come from this checkout's proto.
    echo "pip install clients/python (stubs generated from proto/tavli/v1/engine.proto)"
    rm -rf "$root/clients/python/build"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
        --no-deps --force-reinstall "$root/clients/python"
}
