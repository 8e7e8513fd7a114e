#!/usr/bin/env bash
# Sets up Athena on a fresh machine: Debian's redis-server (when missing and root), a virtualenv in .venv
# with the CPU build of torch, the client (clients/python) and the project with its dev tools and the
# lab (lab/athena_lab: bench, load, evaluation, training; the `lab` extra adds scikit-learn). Safe to
# run again. Every third-party package is installed at the version constraints.txt pins (regenerate it
# with `.venv/bin/python scripts/lock_constraints.py` after upgrading one in .venv).
set -euo pipefail
cd "$(dirname "$0")/.."

CONSTRAINTS=constraints.txt
step() { echo "[$1/5] $2"; }

step 1 "redis-server"
if ! command -v redis-server >/dev/null 2>&1 && [ ! -x /usr/bin/redis-server ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "      installing Debian's redis-server package"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  else
    echo "redis-server is missing: install it with 'sudo apt-get install redis-server', then run this again" >&2
    exit 1
  fi
else
  echo "      already installed"
fi

step 2 "virtualenv .venv and an up-to-date pip"
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
PIP=(.venv/bin/python -m pip install -c "$CONSTRAINTS")

# torch first, pinned: the CPU wheel on these machines; any other build pulls gigabytes. Not quiet: on a
# fresh machine this is the long download, and pip's progress shows it moving.
step 3 "torch 2.13.0, CPU build (about 200 MB on a fresh machine)"
"${PIP[@]}" "torch==2.13.0"
# The client first: the server depends on it (athena-client, not on PyPI: it is clients/python here).
step 4 "the client, athena-client (clients/python)"
"${PIP[@]}" -q -e clients/python
step 5 "the project with its dev tools and the lab (transformers, pymilvus, ...: a few minutes on a fresh machine)"
"${PIP[@]}" -e ".[dev,lab]"
echo "setup done: .venv/bin/athena is ready"
