#!/usr/bin/env bash
# Install everything topoc needs, idempotently: a virtual environment in .venv with the package,
# its dev extras and its Ray extra (the tests start a local Ray cluster for `topoc plan --ray`),
# and Graphviz's `dot` (Debian package graphviz) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# Reinstall only when pyproject.toml changed since the last install.
stamp=.venv/.topoc-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[dev,ray]'
  touch "$stamp"
fi

if ! command -v dot >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: installing graphviz (dot) with apt-get" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz) \
      >/dev/null 2>&1 || echo "setup: could not install graphviz; rendering to svg/png/pdf \
will report how to install it" >&2
  else
    echo "setup: 'dot' is missing; install Graphviz (e.g. apt-get install graphviz) to render" >&2
  fi
fi
