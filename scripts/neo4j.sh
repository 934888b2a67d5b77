#!/usr/bin/env bash
# Local Neo4j Community 5.26 (LTS) server for development, tests and CI.
#
#   scripts/neo4j.sh start    build the launcher if needed, start in the background, wait until ready
#   scripts/neo4j.sh stop     stop it and wait until the process is gone
#   scripts/neo4j.sh status   print running/stopped (exit 0/1)
#   scripts/neo4j.sh wait     wait until a started server answers queries (exit non-zero on timeout)
#   scripts/neo4j.sh build    only build the launcher (mvn, cached)
#
# Environment:
#   RIPPLE_NEO4J_PORT       Bolt port on 127.0.0.1 (default 7687)
#   RIPPLE_NEO4J_PASSWORD   password of user 'neo4j' (default ripple-dev-password)
#   RIPPLE_NEO4J_HTTP_PORT  also serve HTTP on 127.0.0.1 at this port, with Neo4j Browser at
#                           http://127.0.0.1:PORT/browser/ (default: no HTTP)
#   RIPPLE_NEO4J_HOME       data, logs and pid file (default <project>/.neo4j)
#   RIPPLE_NEO4J_TIMEOUT    readiness timeout in seconds (default 180)
#   RIPPLE_NEO4J_HEAP       JVM max heap (default 1g); RIPPLE_NEO4J_PAGECACHE_MB (default 256)
#   RIPPLE_NEO4J_JAVA_OPTS  extra JVM options
#   RIPPLE_NEO4J_CONF       extra Neo4j settings by name, "name=value;name=value" (written to HOME/extra.conf)
#
# Everything is fetched from Maven Central by mvn (org.neo4j:neo4j + org.neo4j:neo4j-bolt);
# the server is the embedded DBMS of scripts/neo4j-launcher with the Bolt connector enabled.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LAUNCHER_DIR="$ROOT/scripts/neo4j-launcher"
MAIN_CLASS="dev.ripple.neo4j.Launcher"
export RIPPLE_NEO4J_PORT="${RIPPLE_NEO4J_PORT:-7687}"
export RIPPLE_NEO4J_PASSWORD="${RIPPLE_NEO4J_PASSWORD:-ripple-dev-password}"
NEO4J_HOME_DIR="$(realpath -m "${RIPPLE_NEO4J_HOME:-$ROOT/.neo4j}")"
TIMEOUT="${RIPPLE_NEO4J_TIMEOUT:-180}"
PORT="$RIPPLE_NEO4J_PORT"
URI="bolt://127.0.0.1:$PORT"
PID_FILE="$NEO4J_HOME_DIR/neo4j.pid"
LOG_FILE="$NEO4J_HOME_DIR/neo4j.log"
STAMP="$LAUNCHER_DIR/target/.built"

log() { echo "neo4j: $*" >&2; }

# ---------------------------------------------------------------- build
needs_build() {
    [[ -f "$STAMP" && -d "$LAUNCHER_DIR/target/lib" ]] || return 0
    [[ -f "$LAUNCHER_DIR/target/classes/dev/ripple/neo4j/Launcher.class" ]] || return 0
    [[ -n "$(find "$LAUNCHER_DIR/pom.xml" "$LAUNCHER_DIR/src" -newer "$STAMP" -print -quit)" ]]
}

build() {
    if ! needs_build; then
        return 0
    fi
    command -v mvn >/dev/null || { log "mvn not found (apt-get install maven)"; exit 1; }
    command -v java >/dev/null || { log "java not found (Java 17+ needed)"; exit 1; }
    log "building launcher (mvn; the first build downloads ~160 MB from Maven Central)"
    rm -rf "$LAUNCHER_DIR/target/lib"
    # (sed: Debian's Maven 3.8 prints stray colour resets even in batch mode)
    mvn -B -q -f "$LAUNCHER_DIR/pom.xml" process-classes 2>&1 | sed 's/\x1b\[0m//g' >&2
    touch "$STAMP"
}

# ---------------------------------------------------------------- process helpers
# Prints the pid of our server for this home if it is alive.
server_pid() {
    local pid
    [[ -f "$PID_FILE" ]] || return 1
    pid="$(cat "$PID_FILE" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    # Guard against a stale pid file whose pid was reused by another process.
    { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF "$MAIN_CLASS $NEO4J_HOME_DIR " || return 1
    echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The URI of the running server, from the "READY bolt://127.0.0.1:PORT ..." line that the
# launcher prints after an authenticated query over Bolt succeeded.
ready_uri() { grep -m1 '^READY ' "$LOG_FILE" 2>/dev/null | cut -d' ' -f2; }

is_ready() {
    local uri
    uri="$(ready_uri)" && [[ -n "$uri" ]] && port_open "${uri##*:}"
}

# Set by cmd_start: a server that did not become ready is not left behind.
STARTED_PID=""

terminate() { # terminate PID: SIGTERM, wait up to 60 s, then SIGKILL; returns once it is gone
    local pid="$1" deadline=$((SECONDS + 60))
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "no clean shutdown after 60s, killing pid $pid"
        kill -KILL "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
    fi
}

fail_with_log() {
    log "$1"
    if [[ -n "$STARTED_PID" ]] && kill -0 "$STARTED_PID" 2>/dev/null; then
        log "stopping the server that did not become ready (pid $STARTED_PID)"
        terminate "$STARTED_PID"
        rm -f "$PID_FILE"
    fi
    if [[ -f "$LOG_FILE" ]]; then
        echo "---- $LOG_FILE (tail) ----" >&2
        tail -n 40 "$LOG_FILE" >&2
    fi
    if [[ -f "$NEO4J_HOME_DIR/logs/debug.log" ]]; then
        echo "---- $NEO4J_HOME_DIR/logs/debug.log (tail) ----" >&2
        grep -E ' (ERROR|WARN) ' "$NEO4J_HOME_DIR/logs/debug.log" | grep -v 'Incorrect file descriptor' | tail -n 20 >&2 || true
    fi
    exit 1
}

# wait_ready PID
wait_ready() {
    local pid="$1" deadline=$((SECONDS + TIMEOUT))
    while ((SECONDS < deadline)); do
        kill -0 "$pid" 2>/dev/null || fail_with_log "server process exited before it was ready"
        if is_ready; then
            return 0
        fi
        sleep 0.5
    done
    fail_with_log "not ready after ${TIMEOUT}s"
}

# ---------------------------------------------------------------- commands
cmd_start() {
    mkdir -p "$NEO4J_HOME_DIR"
    exec 9>"$NEO4J_HOME_DIR/.lock"
    flock 9 # serialise concurrent start/stop calls on the same home
    local pid
    if pid="$(server_pid)"; then
        wait_ready "$pid"
        log "already running (pid $pid)"
        [[ "$(ready_uri)" == "$URI" ]] || log "warning: it was started with another port"
        ready_uri
        return 0
    fi
    if port_open "$PORT"; then
        log "port $PORT is already in use by another process (set RIPPLE_NEO4J_PORT)"
        exit 1
    fi
    if [[ -n "${RIPPLE_NEO4J_HTTP_PORT:-}" ]] && port_open "$RIPPLE_NEO4J_HTTP_PORT"; then
        log "HTTP port $RIPPLE_NEO4J_HTTP_PORT is already in use by another process (set RIPPLE_NEO4J_HTTP_PORT)"
        exit 1
    fi
    build
    local heap="${RIPPLE_NEO4J_HEAP:-1g}"
    # JVM options as Neo4j's own launcher sets them (minus GC tuning), with a small heap.
    local -a jvm=(
        -Xms256m "-Xmx$heap" -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError
        -XX:-OmitStackTraceInFastThrow -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints
        -Djdk.nio.maxCachedBufferSize=1024 -Dio.netty.tryReflectionSetAccessible=true
        -Dlog4j2.disable.jmx=true
        --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED
        --add-opens=java.base/sun.nio.ch=ALL-UNNAMED --enable-native-access=ALL-UNNAMED
    )
    # shellcheck disable=SC2206
    [[ -n "${RIPPLE_NEO4J_JAVA_OPTS:-}" ]] && jvm+=(${RIPPLE_NEO4J_JAVA_OPTS})
    local started=$SECONDS
    : >"$LOG_FILE"
    # Background job of a non-interactive shell: SIGINT is ignored, nohup ignores SIGHUP, so
    # only SIGTERM (stop) ends it. 9>&-: the server must not inherit the lock.
    nohup java "${jvm[@]}" -cp "$LAUNCHER_DIR/target/classes:$LAUNCHER_DIR/target/lib/*" \
        "$MAIN_CLASS" "$NEO4J_HOME_DIR" </dev/null >>"$LOG_FILE" 2>&1 9>&- &
    pid=$!
    STARTED_PID=$pid
    echo "$pid" >"$PID_FILE"
    wait_ready "$pid"
    log "started in $((SECONDS - started))s (pid $pid, user neo4j, log $LOG_FILE)"
    if [[ -n "${RIPPLE_NEO4J_HTTP_PORT:-}" ]]; then
        log "Neo4j Browser: http://127.0.0.1:$RIPPLE_NEO4J_HTTP_PORT/browser/ (user neo4j, password $RIPPLE_NEO4J_PASSWORD)"
    fi
    echo "$URI"
}

cmd_stop() {
    mkdir -p "$NEO4J_HOME_DIR"
    exec 9>"$NEO4J_HOME_DIR/.lock"
    flock 9
    local pid
    if ! pid="$(server_pid)"; then
        rm -f "$PID_FILE"
        log "not running"
        return 0
    fi
    terminate "$pid"
    rm -f "$PID_FILE"
    log "stopped"
}

cmd_status() {
    local pid
    if pid="$(server_pid)"; then
        if is_ready; then
            echo "running (pid $pid, $(ready_uri))"
        else
            echo "running (pid $pid, starting)"
        fi
        return 0
    fi
    echo "stopped"
    return 1
}

cmd_wait() {
    local pid
    pid="$(server_pid)" || fail_with_log "not running (scripts/neo4j.sh start)"
    wait_ready "$pid"
    ready_uri
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    wait) cmd_wait ;;
    build) build ;;
    *)
        echo "usage: $0 start|stop|status|wait|build" >&2
        exit 2
        ;;
esac
