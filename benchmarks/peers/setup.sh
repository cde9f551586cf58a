#!/usr/bin/env bash
# Installs the two peers benchmarks/peers/side_by_side.py runs beside topoc, each in its own
# virtual environment under this folder (git-ignored; never a dependency of topoc):
#   llm-analysis/.venv  llm-analysis 0.2.2 (cli99/llm-analysis), the one-constant roofline
#   calculon/.venv      Calculon (Isaev et al., SC'23), installed from a git checkout at the
#                       pinned commit below: it is not published as a package
# Usage: benchmarks/peers/setup.sh [PYTHON]
#   CALCULON_SRC=/path/to/a/calculon/checkout  use that checkout instead of cloning
#   CALCULON_REPO=URL                          clone from there (default below)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${1:-python3}"
LLM_ANALYSIS_VERSION="0.2.2"
CALCULON_REPO="${CALCULON_REPO:-https://github.com/calculon-ai/calculon}"
# The newest commit of the Calculon history (2024-02-22, "Add inputs/output to stats").
CALCULON_COMMIT="caa4b11f8fe1fee3ba57adaacb7590d7deabd053"

venv() {  # venv DIR: a fresh environment in DIR/.venv unless one is there
  if [ ! -x "$1/.venv/bin/python" ]; then
    mkdir -p "$1"
    "$py" -m venv "$1/.venv"
  fi
}

venv "$here/llm-analysis"
"$here/llm-analysis/.venv/bin/pip" install -q "llm-analysis==$LLM_ANALYSIS_VERSION"

venv "$here/calculon"
src="${CALCULON_SRC:-$here/calculon/src}"
if [ -z "${CALCULON_SRC:-}" ]; then
  if [ ! -d "$src/.git" ]; then
    git clone -q "$CALCULON_REPO" "$src"
  fi
  git -C "$src" checkout -q "$CALCULON_COMMIT"
fi
# what its modules import (calculon/io.py numpy, all_executions.py pandas, psutil); its
# setup.py declares nothing
"$here/calculon/.venv/bin/pip" install -q setuptools wheel numpy pandas psutil
"$here/calculon/.venv/bin/pip" install -q --no-build-isolation "$src"

"$here/llm-analysis/.venv/bin/python" -c "import llm_analysis.analysis" 2>/dev/null
"$here/calculon/.venv/bin/python" -c "import calculon.llm"
echo "peers installed: llm-analysis $LLM_ANALYSIS_VERSION, calculon @ ${CALCULON_COMMIT:0:8}"
