"""Calculon on the rows benchmarks/peers/side_by_side.py sends it: run by the Calculon
environment's Python (benchmarks/peers/setup.sh), never imported by topoc.

Reads {"rows": [row, ...], "systems": folder of Calculon's system files} as JSON on stdin;
writes {row id: {"seconds": s, "notes": [...]} or {"error": why}} on stdout. Each row's
seconds are Calculon's ``Llm.get_total_time()`` for its published strategy on Calculon's own
system file of its GPU (``systems/a100_80g.json`` for every A100 row, ``h100_80g_nvl8.json``
for the H100-family rows), with its memory check off (``Llm._check_mem_caps`` skipped: a row
that ran is not refused for memory, and the time is what is compared).

What Calculon's vocabulary cannot hold is refused per row (mixture of experts, context
parallelism, GPUs it has no system file for) or approximated and noted (a gated MLP as an
ungated one of the same FLOPs, grouped-query attention as multi-head, FSDP as a sharded
optimizer).
"""

from __future__ import annotations

import json
import logging
import os
import sys

#: Calculon's system file for each GPU of the rows (its systems/ folder).
SYSTEMS = {"A100-80GB": "a100_80g.json", "A100-40GB": "a100_80g.json",
           "H100-SXM": "h100_80g_nvl8.json", "H800": "h100_80g_nvl8.json",
           "H200": "h100_80g_nvl8.json", "H100-96GB-HBM2e": "h100_80g_nvl8.json"}
RECOMPUTE = {"none": "none", "": "none", "selective": "attn_only", "full": "full"}


def application(row: dict) -> tuple[dict, list[str]]:
    notes = []
    ffn = row["ffn"]
    if row["gated"]:
        # Calculon's MLP is two matrices; a SwiGLU MLP's three of width F cost what two of
        # width 1.5 F do
        ffn = ffn * 3 // 2
        notes.append("gated MLP as an ungated one of 1.5x width (same FLOPs)")
    if row["kv_heads"] != row["heads"]:
        notes.append("grouped-query attention as multi-head")
    return {"hidden": row["hidden"], "feedforward": ffn, "seq_size": row["seq"],
            "attn_heads": row["heads"], "attn_size": row["head_dim"],
            "num_blocks": row["layers"]}, notes


def execution(row: dict) -> tuple[dict, list[str]]:
    """The row's strategy: tensor parallelism on the NVLink tier (network 0, 8 GPUs) when it
    fits there, data parallelism next to it while tp x dp fits, the rest on the network."""
    notes = []
    tp, pp, dp = row["tp"], row["pp"], row["dp"]
    tp_net = 0 if tp <= 8 else 1
    dp_net = 0 if tp * dp <= 8 else 1
    pp_net = 0 if tp * dp * pp <= 8 else 1
    sharded = dp > 1 and (row["fsdp"] or row["zero"] >= 1)
    if row["fsdp"] or row["zero"] >= 2:
        notes.append("FSDP / ZeRO-2-3 as a sharded optimizer (ZeRO-1)")
    datatype = "float8" if row["fp8"] else "float16"
    return {"num_procs": tp * pp * dp, "tensor_par": tp, "pipeline_par": pp, "data_par": dp,
            "tensor_par_net": tp_net, "pipeline_par_net": pp_net, "data_par_net": dp_net,
            "batch_size": row["batch"], "microbatch_size": row["microbatch"],
            "datatype": datatype, "fused_activation": True, "attention_type": "multihead",
            "activation_recompute": RECOMPUTE[row["recompute"]],
            "pipeline_interleaving": row["interleave"] if pp > 1 else 1,
            "optimizer_sharding": sharded,
            "tensor_par_comm_type": "rs_ag" if row["sp"] and tp > 1 else "ar",
            "tensor_par_overlap": "none", "seq_par_ag_redo": False,
            "data_par_overlap": bool(row["overlap"] and dp > 1), "weight_offload": False,
            "activations_offload": False, "optimizer_offload": False,
            "training": True}, notes


def run(row: dict, systems: str) -> dict:
    from calculon.llm import Llm
    from calculon.system import System
    if row["experts"]:
        return {"error": "no mixture of experts in Calculon"}
    if row["cp"] > 1:
        return {"error": "no context parallelism in Calculon"}
    if row["gpu"] not in SYSTEMS:
        return {"error": f"no Calculon system file for {row['gpu']}"}
    if row["fp8"] and row["gpu"].startswith("A100"):
        return {"error": "no FP8 on A100"}
    app_cfg, notes = application(row)
    exe_cfg, more = execution(row)
    with open(os.path.join(systems, SYSTEMS[row["gpu"]]), encoding="utf-8") as f:
        sys_cfg = json.load(f)
    log = logging.getLogger("calculon")
    model = Llm(Llm.Application(app_cfg), log)
    model._check_mem_caps = lambda: None     # the memory check off
    syst = System(sys_cfg)
    model.compile(syst, Llm.Execution.from_json(exe_cfg))
    model.run(syst)
    return {"seconds": model.get_total_time(), "notes": notes + more}


def main() -> None:
    from calculon.llm import Llm
    logging.disable(logging.CRITICAL)
    req = json.load(sys.stdin)
    out, sys.stdout = sys.stdout, sys.stderr
    result = {}
    for row in req["rows"]:
        try:
            result[row["id"]] = run(row, req["systems"])
        except (Llm.Error, AssertionError, ZeroDivisionError, KeyError) as exc:
            result[row["id"]] = {"error": f"Calculon: {type(exc).__name__}: {exc}"[:200]}
    json.dump(result, out)


if __name__ == "__main__":
    main()
