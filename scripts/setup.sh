#!/usr/bin/env bash
# Install everything topoc needs, idempotently: a virtual environment in .venv with the package
# and its dev, report (matplotlib), lsp (pygls) and ray extras (the tests start a local Ray
# cluster for `topoc plan --ray`); and from Debian's packages Graphviz's `dot`, headless
# Chromium (the HTML report's browser test), slurmctld + munge and ibsim-utils +
# infiniband-diags (the cluster tools' tests) when they are missing.
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
  .venv/bin/python -m pip install --quiet -e '.[dev,report,lsp,ray]'
  touch "$stamp"
fi

missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
# The cluster tools the export/import tests run for real (docs/drift.md): Slurm's controller
# with munge, and InfiniBand's simulator with the discovery tools.
command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
command -v munged >/dev/null 2>&1 || missing+=(munge)
command -v ibsim >/dev/null 2>&1 || missing+=(ibsim-utils)
command -v ibnetdiscover >/dev/null 2>&1 || missing+=(infiniband-diags)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
  || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${missing[*]} with apt-get" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") \
      >/dev/null 2>&1 || echo "setup: could not install ${missing[*]}; rendering reports how to \
install Graphviz, the browser test needs Chromium, the cluster-tool tests slurmctld, munge, \
ibsim-utils and infiniband-diags" >&2
  else
    echo "setup: missing ${missing[*]}; install them (e.g. apt-get install ${missing[*]})" >&2
  fi
fi
