#!/usr/bin/env bash
# The whole test suite: install, start two real Neo4j servers (the second for the sharded store),
# run pytest, stop them.
# Neo4j and the models are required: nothing is skipped when they are missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$(scripts/env.sh)"
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
scripts/chromium.sh ensure >/dev/null || echo "test: no headless Chromium; the graph page tests will fail" >&2
PORT2="${RIPPLE_NEO4J_PORT2:-7688}"
HOME2="${RIPPLE_NEO4J_HOME2:-$ROOT/.neo4j-2}"
started=0
started2=0
second() { env -u RIPPLE_NEO4J_HTTP_PORT RIPPLE_NEO4J_PORT="$PORT2" RIPPLE_NEO4J_HOME="$HOME2" scripts/neo4j.sh "$@"; }
cleanup() {
    if [ "$started" = "1" ]; then scripts/neo4j.sh stop || true; fi
    if [ "$started2" = "1" ]; then second stop || true; fi
}
trap cleanup EXIT
if [ "${RIPPLE_TEST_NEO4J:-1}" = "1" ]; then
    export RIPPLE_NEO4J_HTTP_PORT="${RIPPLE_NEO4J_HTTP_PORT:-7474}" # Neo4j Browser, tested too
    # A second server (another port and home, no HTTP) for the sharded store's tests. Both JVMs start
    # at once (~30-60 s each); the launcher is built first, so the two starts do not race to build it.
    scripts/neo4j.sh build
    pid1="" pid2=""
    if ! scripts/neo4j.sh status >/dev/null 2>&1; then
        scripts/neo4j.sh start &
        pid1=$!
        started=1
    fi
    if ! second status >/dev/null 2>&1; then
        second start &
        pid2=$!
        started2=1
    fi
    up=0
    if [ -n "$pid1" ]; then wait "$pid1" || up=1; fi
    if [ -n "$pid2" ]; then wait "$pid2" || up=1; fi
    [ "$up" = "0" ] || { echo "test: a Neo4j server did not start" >&2; exit 1; }
    export RIPPLE_TEST_NEO4J_URI="${RIPPLE_TEST_NEO4J_URI:-bolt://127.0.0.1:${RIPPLE_NEO4J_PORT:-7687}}"
    export RIPPLE_TEST_NEO4J_URI2="${RIPPLE_TEST_NEO4J_URI2:-bolt://127.0.0.1:$PORT2}"
    export RIPPLE_TEST_NEO4J_PASSWORD="${RIPPLE_NEO4J_PASSWORD:-ripple-dev-password}"
    export RIPPLE_TEST_NEO4J_HTTP_URL="${RIPPLE_TEST_NEO4J_HTTP_URL:-http://127.0.0.1:$RIPPLE_NEO4J_HTTP_PORT}"
fi
set +e
python -m pytest "$@"
rc=$?
set -e
exit $rc
