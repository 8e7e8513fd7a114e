#!/usr/bin/env bash
# Sets up Athena on a fresh machine: Debian's redis-server (when missing and root), a virtualenv in .venv
# with the CPU build of torch, the client (clients/python) and the project with its dev tools and the
# lab (lab/athena_lab: bench, load, evaluation, training; the `lab` extra adds scikit-learn). Safe to
# run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1 && [ ! -x /usr/bin/redis-server ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing redis-server (Debian package)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  else
    echo "redis-server is missing: install it with 'sudo apt-get install redis-server', then run this again" >&2
    exit 1
  fi
fi

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# torch first, pinned: the CPU wheel on these machines; any other build pulls gigabytes.
.venv/bin/python -m pip install -q "torch==2.13.0"
# The client first: the server depends on it (athena-client, not on PyPI: it is clients/python here).
.venv/bin/python -m pip install -q -e clients/python
.venv/bin/python -m pip install -q -e ".[dev,lab]"
echo "setup done: .venv/bin/athena is ready"
