"""llm-analysis on the rows benchmarks/peers/side_by_side.py sends it: run by the llm-analysis
environment's Python (benchmarks/peers/setup.sh), never imported by topoc.

Reads {"rows": [row, ...], "efficiencies": [e, ...]} as JSON on stdin; writes
{row id: {"seconds": {e: seconds}, "full": {e: seconds}, "notes": [...]} or {"error": why}}
on stdout. ``seconds`` is llm-analysis's one-constant roofline, ``latency_per_iter_using_flops``
(``LLMAnalysis.training``: the step's FLOPs over the GPUs' peak times the FLOP efficiency),
at every efficiency asked for; ``full`` its ``latency_per_iter`` (three forward latencies per
micro-batch, each the larger of FLOPs and HBM traffic per layer plus its tensor-parallel and
ZeRO communication at peak bandwidth, nothing overlapped, plus the weight update), every other
efficiency at the tool's default (1). What the row's model is in llm-analysis's vocabulary,
and what it cannot say, is in the notes.
"""

from __future__ import annotations

import json
import logging
import sys

try:  # absent where topoc's tests import the adapters alone
    from llm_analysis.analysis import ActivationRecomputation, DSZeRO, LLMAnalysis
    from llm_analysis.config import (GPUConfig, ModelConfig, ParallelismConfig,
                                     get_dtype_config_by_name, get_gpu_config_by_name)
except ImportError:
    ActivationRecomputation = None

#: The rows' GPUs as llm-analysis's GPU configs: its own files where it has the part
#: (llm_analysis/gpu_configs/*.json), else the same fields with the figures of topoc's library
#: (library/nvidia/devices.topo: dense BF16 / FP8 peaks, HBM bandwidth; NVLink per GPU and
#: direction, the node's network as llm-analysis's own H100 file states it). FP8 GEMMs run at
#: the config's 8-bit peak (``peak_i8_TFLOPS``).
OWN = {"A100-80GB": "a100-sxm-80gb", "A100-40GB": "a100-sxm-40gb", "H100-SXM": "h100-sxm-80gb"}
MADE = {
    # H200: the H100's die, 141 GB at 4.8 TB/s, same peaks and NVLink
    "H200": dict(mem_per_GPU_in_GB=141, hbm_bandwidth_in_GB_per_sec=4800,
                 intra_node_bandwidth_in_GB_per_sec=450, peak_fp16_TFLOPS=989,
                 peak_i8_TFLOPS=1979, inter_node_bandwidth_in_GB_per_sec=400),
    # H800: the H100 SXM with NVLink cut to 400 GB/s both ways (200 per direction)
    "H800": dict(mem_per_GPU_in_GB=80, hbm_bandwidth_in_GB_per_sec=3350,
                 intra_node_bandwidth_in_GB_per_sec=200, peak_fp16_TFLOPS=989,
                 peak_i8_TFLOPS=1979, inter_node_bandwidth_in_GB_per_sec=400),
    # torchtitan's H100 96 GB HBM2e parts, at the H100 SXM's peaks (their 500 W limit is a
    # topoc fit, not something llm-analysis knows)
    "H100-96GB-HBM2e": dict(mem_per_GPU_in_GB=96, hbm_bandwidth_in_GB_per_sec=3350,
                            intra_node_bandwidth_in_GB_per_sec=450, peak_fp16_TFLOPS=989,
                            peak_i8_TFLOPS=1979, inter_node_bandwidth_in_GB_per_sec=400),
    "B200": dict(mem_per_GPU_in_GB=180, hbm_bandwidth_in_GB_per_sec=8000,
                 intra_node_bandwidth_in_GB_per_sec=900, peak_fp16_TFLOPS=2250,
                 peak_i8_TFLOPS=4500, inter_node_bandwidth_in_GB_per_sec=400),
    "GB200": dict(mem_per_GPU_in_GB=186, hbm_bandwidth_in_GB_per_sec=8000,
                  intra_node_bandwidth_in_GB_per_sec=900, peak_fp16_TFLOPS=2500,
                  peak_i8_TFLOPS=5000, inter_node_bandwidth_in_GB_per_sec=400),
}
#: Megatron's selective recompute is the core attention (QK^T, softmax, x V).
RECOMPUTE = {"none": "NONE", "": "NONE", "selective": "ATTN_COMPUTE", "full": "FULL"}


def gpu(name: str) -> GPUConfig:
    if name in OWN:
        return get_gpu_config_by_name(OWN[name])
    fig = MADE[name]
    return GPUConfig(name=name.lower(), intra_node_min_message_latency=8e-06, **fig)


def active_ffn(row: dict) -> float:
    """The MLP width a token passes through, averaged over the layers: llm-analysis's MLP
    FLOPs are one MLP of ``expansion_ratio`` x hidden per token, so a MoE layer is given as
    the experts a token runs (top-k plus shared) and averaged with the dense layers."""
    if not row["experts"]:
        return row["ffn"]
    moe = row["layers"] - row["dense_layers"]
    return (moe * (row["top_k"] + row["shared_experts"]) * row["expert_ffn"] +
            row["dense_layers"] * row["ffn"]) / row["layers"]


def model(row: dict):
    """The row's model in llm-analysis's fields (a ModelConfig), and what had to be
    approximated."""
    notes = []
    ffn = active_ffn(row)
    if row["experts"]:
        notes.append("MoE as its active experts (one MLP of top-k x expert width); no "
                     "expert-parallel all-to-all")
    if row["head_dim"] * row["heads"] != row["hidden"]:
        notes.append("attention projections as hidden x hidden (heads x head width differs)")
    if row["mla"]:
        notes.append("multi-head latent attention as ordinary attention")
    return ModelConfig(name=row["id"], num_layers=row["layers"], n_head=row["heads"],
                       hidden_dim=row["hidden"], vocab_size=row["vocab"],
                       max_seq_len=row["seq"], num_key_value_heads=row["kv_heads"],
                       ffn_embed_dim=int(ffn), expansion_ratio=ffn / row["hidden"],
                       model_type="llama", mlp_gated_linear_units=row["gated"]), notes


def run(row: dict, efficiencies: list[float]) -> dict:
    if row["cp"] > 1:
        return {"error": "no context parallelism in llm-analysis"}
    if row["gpu"] not in OWN and row["gpu"] not in MADE:
        return {"error": f"no GPU config for {row['gpu']}"}
    cfg, notes = model(row)
    dtype = get_dtype_config_by_name("w8a8e16" if row["fp8"] else "w16a16e16")
    par = ParallelismConfig(tp_size=row["tp"], pp_size=row["pp"], dp_size=row["dp"],
                            ep_size=1, sp_size=row["tp"] if row["sp"] else 1)
    zero = DSZeRO(min(3, 3 if row["fsdp"] else row["zero"]))
    out, full = {}, {}
    for e in efficiencies:
        a = LLMAnalysis(cfg, gpu(row["gpu"]), dtype, par, flops_efficiency=e)
        summary = a.training(batch_size_per_gpu=row["microbatch"],
                             global_batch_size=row["batch"], seq_len=row["seq"],
                             activation_recomputation=ActivationRecomputation[
                                 RECOMPUTE[row["recompute"]]],
                             ds_zero=zero, flash_attn=row["flash"])
        out[str(e)] = summary["latency_per_iter_using_flops"]
        full[str(e)] = summary["latency_per_iter"]
    if row["fp8"]:
        notes.append("FP8 as 8-bit weights and activations at the 8-bit peak")
    return {"seconds": out, "full": full, "notes": notes}


def main() -> None:
    logging.disable(logging.CRITICAL)
    req = json.load(sys.stdin)
    out, sys.stdout = sys.stdout, sys.stderr   # the tool prints its reports
    result = {}
    for row in req["rows"]:
        try:
            result[row["id"]] = run(row, req["efficiencies"])
        except AssertionError as exc:
            # get_num_flops_fwd_total checks a multi-head model's FLOPs against the 24 b s h^2
            # formula of a 4 x hidden ungated MLP and refuses any other
            result[row["id"]] = {"error": "llm-analysis refuses it: " + (
                str(exc) or "its FLOP check of a multi-head model with an MLP other than "
                "4 x hidden fails")}
        except Exception as exc:  # the peer's own refusal, reported per row
            result[row["id"]] = {"error": f"llm-analysis: {type(exc).__name__}: {exc}"[:200]}
    json.dump(result, out)


if __name__ == "__main__":
    main()
