#!/usr/bin/env bash
# The whole test suite: install, start a real Neo4j, run pytest, stop Neo4j.
# Neo4j and the models are required: nothing is skipped when they are missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$(scripts/env.sh)"
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
scripts/chromium.sh ensure >/dev/null || echo "test: no headless Chromium; the graph page tests will fail" >&2
started=0
started2=0
fault_started=0
# A second server (its own port and home, no HTTP) for the sharded store's tests (tests/graphstore/test_sharded_neo4j.py).
second() { env -u RIPPLE_NEO4J_HTTP_PORT RIPPLE_NEO4J_PORT="${RIPPLE_NEO4J_PORT2:-7688}" RIPPLE_NEO4J_HOME="${RIPPLE_NEO4J_HOME2:-$ROOT/.neo4j-2}" scripts/neo4j.sh "$@"; }
cleanup() {
    if [ "$started" = "1" ]; then scripts/neo4j.sh stop || true; fi
    if [ "$started2" = "1" ]; then second stop || true; fi
    if [ "$fault_started" = "1" ]; then wait || true; fault_neo4j stop >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
if [ "${RIPPLE_TEST_NEO4J:-1}" = "1" ]; then
    export RIPPLE_NEO4J_HTTP_PORT="${RIPPLE_NEO4J_HTTP_PORT:-7474}" # Neo4j Browser, tested too
    if ! scripts/neo4j.sh status >/dev/null 2>&1; then
        scripts/neo4j.sh start
        started=1
    fi
    if ! second status >/dev/null 2>&1; then
        second start
        started2=1
    fi
    export RIPPLE_TEST_NEO4J_URI="${RIPPLE_TEST_NEO4J_URI:-bolt://127.0.0.1:${RIPPLE_NEO4J_PORT:-7687}}"
    export RIPPLE_TEST_NEO4J_URI2="${RIPPLE_TEST_NEO4J_URI2:-bolt://127.0.0.1:${RIPPLE_NEO4J_PORT2:-7688}}"
    export RIPPLE_TEST_NEO4J_PASSWORD="${RIPPLE_NEO4J_PASSWORD:-ripple-dev-password}"
    export RIPPLE_TEST_NEO4J_HTTP_URL="${RIPPLE_TEST_NEO4J_HTTP_URL:-http://127.0.0.1:$RIPPLE_NEO4J_HTTP_PORT}"
fi
# A third server for tests/faults/test_neo4j_outage.py, which stops and starts it (never the others).
# Started in the background (the launcher is built by now), it is ready by the time that test runs.
export RIPPLE_TEST_FAULT_NEO4J_PORT="${RIPPLE_TEST_FAULT_NEO4J_PORT:-7689}"
export RIPPLE_TEST_FAULT_NEO4J_HOME="${RIPPLE_TEST_FAULT_NEO4J_HOME:-$ROOT/.neo4j-faults}"
fault_neo4j() {
    env -u RIPPLE_NEO4J_HTTP_PORT RIPPLE_NEO4J_PORT="$RIPPLE_TEST_FAULT_NEO4J_PORT" \
        RIPPLE_NEO4J_HOME="$RIPPLE_TEST_FAULT_NEO4J_HOME" scripts/neo4j.sh "$@"
}
if [ "${RIPPLE_TEST_NEO4J:-1}" = "1" ] && ! fault_neo4j status >/dev/null 2>&1; then
    fault_neo4j start >/dev/null 2>&1 &
    fault_started=1
fi
set +e
python -m pytest "$@"
rc=$?
set -e
exit $rc
