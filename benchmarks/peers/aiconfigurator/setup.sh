#!/usr/bin/env bash
# Install NVIDIA's AIConfigurator (a public serving estimator, github ai-dynamo/aiconfigurator)
# in its own virtual environment beside this script, never as a topoc dependency. It needs no
# GPU: it interpolates its own tables of kernels measured on H100/H200/B200 per engine version.
#   bash benchmarks/peers/aiconfigurator/setup.sh
# then benchmarks/peers/serving_side_by_side.py runs it on the validation rows.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python3 -m venv "$here/.venv"
"$here/.venv/bin/pip" install -q --upgrade pip
"$here/.venv/bin/pip" install -q "aiconfigurator==${AIC_VERSION:-0.12.0}"
"$here/.venv/bin/python" -c "import aiconfigurator, sys; print('aiconfigurator', getattr(aiconfigurator, '__version__', '?'), sys.version.split()[0])"
