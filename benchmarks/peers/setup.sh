#!/usr/bin/env bash
# Installs the two peers benchmarks/peers/side_by_side.py runs beside topoc, each in its own
# virtual environment under this folder (git-ignored; never a dependency of topoc):
#   llm-analysis/.venv  llm-analysis (cli99/llm-analysis), the one-constant roofline, from a git
#                       checkout at the pinned commit below: the 0.2.2 package (2023-11)
#                       counts every MLP as 4 x hidden wide and ungated; the repository's
#                       newer code (same version number) counts gated MLPs and their width
#   calculon/.venv      Calculon (Isaev et al., SC'23), from a git checkout at the pinned
#                       commit below: it is not published as a package
# Usage: benchmarks/peers/setup.sh [PYTHON]
#   LLM_ANALYSIS_SRC=/path/to/a/checkout   CALCULON_SRC=/path/to/a/checkout   use those
#   LLM_ANALYSIS_REPO=URL                  CALCULON_REPO=URL                  clone from there
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${1:-python3}"
LLM_ANALYSIS_REPO="${LLM_ANALYSIS_REPO:-https://github.com/cli99/llm-analysis}"
# 2024-11-13, "fix allreduce latency and memory usage calculation when using tp (#28)"
LLM_ANALYSIS_COMMIT="d841e40aec8c84b9e76ba9cfbce67418adb172bd"
CALCULON_REPO="${CALCULON_REPO:-https://github.com/calculon-ai/calculon}"
# The newest commit of the Calculon history (2024-02-22, "Add inputs/output to stats").
CALCULON_COMMIT="caa4b11f8fe1fee3ba57adaacb7590d7deabd053"

venv() {  # venv DIR: a fresh environment in DIR/.venv unless one is there
  if [ ! -x "$1/.venv/bin/python" ]; then
    mkdir -p "$1"
    "$py" -m venv "$1/.venv"
  fi
}

checkout() {  # checkout GIVEN_SRC DEFAULT_DIR REPO COMMIT: prints the source folder
  if [ -n "$1" ]; then echo "$1"; return; fi
  if [ ! -d "$2/.git" ]; then git clone -q "$3" "$2"; fi
  git -C "$2" checkout -q "$4"
  echo "$2"
}

venv "$here/llm-analysis"
src="$(checkout "${LLM_ANALYSIS_SRC:-}" "$here/llm-analysis/src" "$LLM_ANALYSIS_REPO" \
  "$LLM_ANALYSIS_COMMIT")"
"$here/llm-analysis/.venv/bin/pip" install -q "$src"

venv "$here/calculon"
src="$(checkout "${CALCULON_SRC:-}" "$here/calculon/src" "$CALCULON_REPO" "$CALCULON_COMMIT")"
# what its modules import (calculon/io.py numpy, all_executions.py pandas, psutil); its
# setup.py declares nothing
"$here/calculon/.venv/bin/pip" install -q setuptools wheel numpy pandas psutil
"$here/calculon/.venv/bin/pip" install -q --no-build-isolation "$src"

"$here/llm-analysis/.venv/bin/python" -c "import llm_analysis.analysis" 2>/dev/null
"$here/calculon/.venv/bin/python" -c "import calculon.llm"
echo "peers installed: llm-analysis @ ${LLM_ANALYSIS_COMMIT:0:8}, calculon @ ${CALCULON_COMMIT:0:8}"
