"""Run AIConfigurator's single-point estimate on rows given as JSON lines on stdin; print one
JSON line per row on stdout. Runs in AIConfigurator's own venv (setup.sh), never topoc's:

    benchmarks/peers/aiconfigurator/.venv/bin/python benchmarks/peers/aiconfigurator/run_rows.py

Each input line: {"row", "model", "system", "backend", "tp", "ep", "adp", "batch", "isl",
"osl", "gemm", "kv"} and for mixtures of experts "moe" (the experts' quantisation); each
output line: {"row", "ttft_s", "tpot_s", "tok_s"} (per replica:
the caller scales by replicas) or {"row", "error"} when AIConfigurator has no answer (a model,
system or engine its tables do not cover). The estimate is `aiconfigurator cli estimate
--estimate-mode agg` (aggregated in-flight batching at a fixed batch: TTFT and TPOT of its
analytic IFB schedule), through its Python API so the tables load once.

With ``--factors`` it prints instead, for each row, the queueing factor its agg TTFT multiplies
the per-request prefill by ({"row", "queuing_factor"}): the backend's ``_ttft_queuing_factor``
hook at the row's batch and ``steps_to_finish_ctx`` = ceil(isl x batch / ctx_tokens), with
ctx_tokens = isl as ``cli estimate`` defaults it (aiconfigurator 0.12.0
``aiconfigurator_core/sdk/backends/base_backend.py`` lines 1250 and 1322-1323,
``aiconfigurator/cli/api.py`` line 1334). It loads no kernel table and takes a second.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
logging.disable(logging.WARNING)


def factors() -> None:
    import math
    from aiconfigurator_core.sdk.backends.factory import get_backend
    for line in sys.stdin:
        if not line.strip():
            continue
        r = json.loads(line)
        backend = get_backend(r["backend"])
        steps = math.ceil(r["isl"] * r["batch"] / r["isl"])
        qf = float(backend._ttft_queuing_factor(r["batch"], steps))
        print(json.dumps({"row": r["row"], "queuing_factor": qf}), flush=True)


def main() -> None:
    if "--factors" in sys.argv[1:]:
        factors()
        return
    import warnings
    warnings.simplefilter("ignore")
    from aiconfigurator.cli.api import cli_estimate
    for line in sys.stdin:
        if not line.strip():
            continue
        r = json.loads(line)
        out = {"row": r["row"]}
        try:
            moe = {}
            if r.get("ep"):
                moe = {"moe_ep_size": r["ep"], "moe_tp_size": max(1, r["tp"] // r["ep"])}
                if r.get("adp"):
                    moe.update(attention_dp_size=r["tp"])
            if r.get("moe"):
                moe["moe_quant_mode"] = r["moe"]
            with contextlib.redirect_stdout(io.StringIO()):
                res = cli_estimate(
                    r["model"], r["system"], mode="agg", backend_name=r["backend"],
                    isl=r["isl"], osl=r["osl"], batch_size=r["batch"],
                    tp_size=1 if r.get("adp") else r["tp"], gemm_quant_mode=r["gemm"],
                    kvcache_quant_mode=r["kv"], **moe)
            out.update(ttft_s=res.ttft / 1e3, tpot_s=res.tpot / 1e3,
                       tok_s=res.tokens_per_second)
        except Exception as exc:     # noqa: BLE001 - the row is reported, not the run stopped
            out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
