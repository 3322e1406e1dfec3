# shellcheck shell=bash
# Start tavli-engine on loopback for a CI script, wait until it listens, stop it.
# Sourced by scripts/smoke.sh, examples/python/ci.sh, clients/ci.sh and web/ci.sh:
#
#   . "$ROOT/scripts/lib/server.sh"
#   SERVER_LOGS=$WORK                      # where the servers' logs go (required)
#   trap 'server_cleanup; rm -rf "$WORK"' EXIT
#   server_build                           # cargo build --release; sets TAVLI_BIN
#   server_start NAME PORT [ARGS...]       # "$TAVLI_BIN" ARGS... in the background
#   ... "$SERVER_PID" ...
#   server_stop "$SERVER_PID"              # SIGTERM must end it with status 0
#
# server_start logs to $SERVER_LOGS/NAME.log (RUST_LOG=warn unless RUST_LOG is set)
# and returns once the process listens on PORT (its own socket: a port that another
# process holds does not count), at most after 10 s; it sets SERVER_PID. A server
# that exits, never listens, or does not stop with status 0 within 10 s of SIGTERM
# fails the script with its log on stderr (through the caller's `die MESSAGE` when
# it defines one). server_cleanup kills (SIGKILL) every server started here that is
# still running.

SERVER_PIDS=()

_server_die() {
    if declare -F die >/dev/null; then die "$@"; fi
    printf 'FAIL: %s\n' "$*" >&2
    exit 1
}

# server_build: the release binary of this checkout (TAVLI_BIN).
server_build() {
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    (cd "$root" && cargo build --release --quiet --bin tavli-engine)
    TAVLI_BIN="$root/target/release/tavli-engine"
}

# server_show_log NAME: the server's log on stderr.
server_show_log() {
    cat "${SERVER_LOGS:?}/$1.log" >&2 || true
}

# _server_listens PID PORT: PID listens on PORT. On Linux, one of PID's descriptors
# is a socket that /proc/net/tcp{,6} lists as listening on PORT (a port that another
# process holds does not count); elsewhere, 127.0.0.1:PORT accepts a connection.
_server_listens() {
    local pid=$1 port=$2 inode
    if [ ! -r /proc/net/tcp ]; then
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
        return
    fi
    while read -r inode; do
        find "/proc/$pid/fd" -lname "socket:\[$inode\]" 2>/dev/null | grep -q . && return 0
    done < <(awk -v p=":$(printf '%04X' "$port")" \
        '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
    return 1
}

# server_start NAME PORT [ARGS...]
server_start() {
    local name=$1 port=$2 pid
    shift 2
    RUST_LOG=${RUST_LOG:-warn} "${TAVLI_BIN:?server_build first}" "$@" >"${SERVER_LOGS:?}/$name.log" 2>&1 &
    pid=$!
    SERVER_PIDS+=("$pid")
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || { server_show_log "$name"; _server_die "$name server exited at start"; }
        if _server_listens "$pid" "$port"; then
            # shellcheck disable=SC2034 # for the caller
            SERVER_PID=$pid
            return 0
        fi
        sleep 0.1
    done
    server_show_log "$name"
    _server_die "$name server not listening on 127.0.0.1:$port after 10 s"
}

# server_stop PID: SIGTERM; the server must exit with status 0 within 10 s.
server_stop() {
    local pid=$1 status=0
    kill -TERM "$pid"
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && _server_die "server $pid still running 10 s after SIGTERM"
    wait "$pid" || status=$?
    [ "$status" = 0 ] || _server_die "server $pid exited with status $status after SIGTERM"
}

# server_cleanup: SIGKILL to every server started here that still runs.
server_cleanup() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    done
    return 0
}
