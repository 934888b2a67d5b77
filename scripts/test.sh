#!/usr/bin/env bash
# The whole test suite: install, start real Neo4j servers, run pytest, stop the servers.
# Neo4j and the models are required: nothing is skipped when they are missing.
#
# pytest runs in RIPPLE_TEST_WORKERS parallel worker processes (pytest-xdist, --dist loadgroup; default 2,
# 1 = one process). The Neo4j tests wipe the servers, so they form one xdist group (tests/conftest.py):
# one worker runs them one after the other on the one set of servers while the other runs the rest.
# RELIABILITY.md, "The suite's time", has the measurements behind the default.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$(scripts/env.sh)"
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
scripts/chromium.sh ensure >/dev/null || echo "test: no headless Chromium; the graph page tests will fail" >&2
WORKERS="${RIPPLE_TEST_WORKERS:-2}"
PORT1="${RIPPLE_NEO4J_PORT:-7687}"
PORT2="${RIPPLE_NEO4J_PORT2:-7688}"
HTTP1="${RIPPLE_NEO4J_HTTP_PORT:-7474}" # Neo4j Browser, tested too
# The test servers' data lives in memory (/dev/shm) when the machine has room there: each Neo4j commit
# waits for the disk (fsync of the transaction log), 8.8 ms per one-row write here against 1.2-2.5 ms on
# tmpfs (RELIABILITY.md "The suite's time"), and the test servers are emptied by every test anyway, so
# surviving a power cut is worth nothing to them. (A process killed by a test keeps its data either way.)
TEST_DATA="$ROOT"
if [ -z "${RIPPLE_TEST_ON_DISK:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] \
    && [ "$(df -Pk /dev/shm | awk 'NR == 2 {print $4}')" -gt 2097152 ]; then
    TEST_DATA="/dev/shm/ripple-test-$(id -u)-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)"
fi
HOME1="${RIPPLE_NEO4J_HOME:-$TEST_DATA/.neo4j}"
HOME2="${RIPPLE_NEO4J_HOME2:-$TEST_DATA/.neo4j-2}"
# The test servers never replan a cached query: the tests wipe and refill the database all the time, so
# with Neo4j's defaults (replan when the statistics moved by 75%, at most every 10 s) every query was
# planned again and again: tests/agent/test_layers.py's 14 Neo4j tests cost the server 217 CPU-s
# with replanning and 158 without (wall 208 -> 145 s, RELIABILITY.md "The suite's time"). Test data
# stays small, so a plan made on a nearly empty database is never the wrong one here; the development
# server of scripts/neo4j.sh keeps the defaults (a benchmark's 100k store needs plans that follow it).
export RIPPLE_NEO4J_CONF="${RIPPLE_NEO4J_CONF-dbms.cypher.min_replan_interval=1h;dbms.cypher.statistics_divergence_threshold=1.0}"
# server KIND COMMAND: scripts/neo4j.sh for the main server (KIND 1, with HTTP) or the sharded tests' second one (KIND 2)
server() {
    local kind="$1"
    shift
    if [ "$kind" = 1 ]; then
        env RIPPLE_NEO4J_PORT="$PORT1" RIPPLE_NEO4J_HTTP_PORT="$HTTP1" RIPPLE_NEO4J_HOME="$HOME1" scripts/neo4j.sh "$@"
    else
        env -u RIPPLE_NEO4J_HTTP_PORT RIPPLE_NEO4J_PORT="$PORT2" RIPPLE_NEO4J_HOME="$HOME2" scripts/neo4j.sh "$@"
    fi
}
started=() # KIND of each server started here (and stopped at the end)
fault_started=0
cleanup() {
    for kind in ${started[@]+"${started[@]}"}; do
        server "$kind" stop || true
    done
    if [ "$fault_started" = "1" ]; then wait || true; fault_neo4j stop >/dev/null 2>&1 || true; fi
    # Give the memory back: what the servers kept in /dev/shm is only ever test data.
    if [ "$TEST_DATA" != "$ROOT" ] && ! server 1 status >/dev/null 2>&1 && ! server 2 status >/dev/null 2>&1 \
        && ! fault_neo4j status >/dev/null 2>&1; then rm -rf "$TEST_DATA"; fi
}
trap cleanup EXIT
if [ "${RIPPLE_TEST_NEO4J:-1}" = "1" ]; then
    # The servers start side by side (the launcher is built first, once): each start is mostly the JVM's.
    scripts/neo4j.sh build
    pids=()
    for kind in 1 2; do
        if ! server "$kind" status >/dev/null 2>&1; then
            started+=("$kind")
            server "$kind" start >/dev/null &
            pids+=($!)
        fi
    done
    for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid"; done
    export RIPPLE_TEST_NEO4J_URI="${RIPPLE_TEST_NEO4J_URI:-bolt://127.0.0.1:$PORT1}"
    export RIPPLE_TEST_NEO4J_URI2="${RIPPLE_TEST_NEO4J_URI2:-bolt://127.0.0.1:$PORT2}"
    export RIPPLE_TEST_NEO4J_PASSWORD="${RIPPLE_NEO4J_PASSWORD:-ripple-dev-password}"
    export RIPPLE_TEST_NEO4J_HTTP_URL="${RIPPLE_TEST_NEO4J_HTTP_URL:-http://127.0.0.1:$HTTP1}"
fi
# A third server for tests/faults/test_neo4j_outage.py, which stops and starts it (never the others).
# Started in the background (the launcher is built by now), it is ready by the time that test runs.
export RIPPLE_TEST_FAULT_NEO4J_PORT="${RIPPLE_TEST_FAULT_NEO4J_PORT:-7689}"
export RIPPLE_TEST_FAULT_NEO4J_HOME="${RIPPLE_TEST_FAULT_NEO4J_HOME:-$TEST_DATA/.neo4j-faults}"
fault_neo4j() {
    env -u RIPPLE_NEO4J_HTTP_PORT RIPPLE_NEO4J_PORT="$RIPPLE_TEST_FAULT_NEO4J_PORT" \
        RIPPLE_NEO4J_HOME="$RIPPLE_TEST_FAULT_NEO4J_HOME" scripts/neo4j.sh "$@"
}
if [ "${RIPPLE_TEST_NEO4J:-1}" = "1" ] && ! fault_neo4j status >/dev/null 2>&1; then
    fault_neo4j start >/dev/null 2>&1 &
    fault_started=1
fi
workers=()
if [ "$WORKERS" -gt 1 ]; then workers=(-n "$WORKERS" --dist loadgroup); fi
set +e
python -m pytest ${workers[@]+"${workers[@]}"} "$@"
rc=$?
set -e
exit $rc
