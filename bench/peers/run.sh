#!/usr/bin/env bash
# The peer benchmark in one command: a venv of its own (.venv-peers) with the `peers` extra,
# so the main venv never gets LangGraph; then `python -m bench.peers` (arguments passed on).
# Writes bench/results/peers.md and bench/results/peers.json. Takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv-peers/bin/python ]; then
    "$PYTHON" -m venv .venv-peers
fi
.venv-peers/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev,peers]'
exec .venv-peers/bin/python -m bench.peers "$@"
