#!/usr/bin/env bash
# Create (once) and print the path of ripple's virtualenv.
#
# The virtualenv lives outside the clone, keyed by a hash of pyproject.toml, so
# repeated installs and CI runs on the same machine reuse it (torch alone is
# gigabytes); a fresh machine builds it from scratch with the same command.
# The project itself is (re)installed in editable mode on every call, which
# takes seconds and points the venv at the clone that asked.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
HASH="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -c1-12)"
VENV="${RIPPLE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ripple/venv-$HASH}"

if [ ! -f "$VENV/.ripple-deps-ok" ]; then
    echo "ripple: building virtualenv $VENV (first time: several minutes, torch is large)" >&2
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip setuptools wheel >&2
    if [ -n "${RIPPLE_TORCH_INDEX:-}" ]; then
        # e.g. https://download.pytorch.org/whl/cpu: the CPU-only torch build, ~4 GB smaller than PyPI's CUDA one
        echo "ripple: installing torch from $RIPPLE_TORCH_INDEX" >&2
        "$VENV/bin/python" -m pip install --quiet torch --index-url "$RIPPLE_TORCH_INDEX" >&2
    fi
    "$VENV/bin/python" -m pip install --quiet --progress-bar off -e "$ROOT[dev]" >&2
    touch "$VENV/.ripple-deps-ok"
else
    "$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "$ROOT" >&2
fi
echo "$VENV"
