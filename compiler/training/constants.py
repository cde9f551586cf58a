"""Every fitted or chosen constant of the training, memory and serving models in one registry:
its value, unit, physical meaning, how it was obtained, and the rows and sources behind it.

Code reads these records (``value``); nothing else in compiler/training or compiler/analysis
holds a fitted figure. ``how`` says what a value is:

- ``fitted``: searched on published runs by a script (``rows`` are the row ids, ``sources`` the
  documents they come from); a figure fitted on one run, or on the runs of one source, carries a
  ``caveat`` saying so, as does a figure the fit drove to a limit of its search;
- ``derived``: computed from measurements by a stated rule (a percentile), not searched;
- ``chosen``: a round or order-of-magnitude figure, not fitted; its ``sources`` are what
  bounds or checks it, and its ``caveat`` says that nothing fixes the value itself.

Figures read from a datasheet, a paper's table or a framework's source (peaks, SM counts,
default bucket sizes, DeepSpeed's ZeRO-3 defaults, Megatron-Core's kernels) stay next to the
code that uses them with their citation: they are inputs, not fits. ``tests/compiler/training/
test_constants.py`` walks the registry (every record has a unit, a meaning and a source, and
is read by code outside the tests) and checks the GEMM fit rows against tests/training_rows.py.
"""

from __future__ import annotations

from typing import Any

import attrs

#: The published-run sources of the GEMM fit rows (tests/fixtures/training/SOURCES.md).
MBRIDGE = "NVIDIA Megatron-Bridge performance summary archive, 25.11 (docs/performance-summary-archive.md)"
TORCHTITAN_H100 = "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md"
TORCHTITAN_A100 = "pytorch/torchtitan docs/performance.md (A100)"
NEMO = "NVIDIA NeMo docs/source/performance/performance_summary.md (24.07)"
FOUNDRY = "MosaicML llm-foundry scripts/train/benchmarking/README.md"
NARAYANAN = "Narayanan et al. 2021, Efficient Large-Scale Language Model Training (SC'21), Table 1"
AUTOMODEL = "NVIDIA NeMo AutoModel performance summary"
PLAN_FIT = "benchmarks/plan_calibration.py --fit (coordinate descent on the RMS log error)"

AMPERE_ROWS = ("narayanan21-t1-18.4b-256gpu", "narayanan21-t1-145.6b-1536gpu",
               "tt24a100-llama3-8b-64gpu-selop", "llmfoundry-a100-80gb-mpt-7b-s2048-8gpu-bf16")
HOPPER_ROWS = ("mbridge-2511-h100-llama370b-64-fp8-cs", "mbridge-2511-h100-gptoss-64-bf16",
               "tt24-t1-8b-8gpu-fsdp-bf16", "nemo2407-h100-gpt3-175b-128gpu-fp8",
               "llmfoundry-h100-sxm-mpt-7b-s2048-8gpu-bf16",
               "automodel-h100-qwen3-30b-a3b-8gpu-bf16", "automodel-h100-llama3-70b-64gpu-bf16")
HOPPER_FP8_ROWS = ("mbridge-2511-h100-llama370b-64-fp8-cs", "nemo2407-h100-gpt3-175b-128gpu-fp8")
BLACKWELL_ROWS = ("mbridge-2511-gb200-llama31405b-256-fp8-cs", "mbridge-2511-gb200-dsv3-256-bf16",
                  "mbridge-2511-b200-llama38b-8-fp8-cs")
BLACKWELL_FP8_ROWS = ("mbridge-2511-gb200-llama31405b-256-fp8-cs",
                      "mbridge-2511-b200-llama38b-8-fp8-cs")


@attrs.frozen
class Constant:
    """One constant: what it is, what it is worth, and what it rests on."""

    name: str
    value: Any
    unit: str
    meaning: str
    how: str                         # "fitted", "derived" or "chosen" (the module's docstring)
    sources: tuple[str, ...]
    rows: tuple[str, ...] = ()       # the published rows it was fitted or derived on
    caveat: str = ""                 # one run, one source, at a search limit, not fixed by data
    #: how many published rows the fit used, when ``rows`` describes them rather than lists them
    row_count: int | None = None

    @property
    def documents(self) -> tuple[str, ...]:
        """The published sources among ``sources`` (not the scripts that fit or check it)."""
        return tuple(s for s in self.sources if not s.startswith("benchmarks/"))

    @property
    def one_source(self) -> bool:
        """Fitted on a single run or on the runs of a single source: the issue-42 flag."""
        count = self.row_count if self.row_count is not None else len(self.rows)
        return self.how == "fitted" and (count <= 1 or len(self.documents) <= 1)


def _gemm(gen: str, key: str, value: float, unit: str, meaning: str, rows: tuple[str, ...],
          sources: tuple[str, ...], caveat: str = "") -> Constant:
    return Constant(f"gemm.{gen}.{key}", value, unit, meaning, "fitted", sources + (PLAN_FIT,),
                    rows, caveat)


_E_MAX = "plateau a large bf16 GEMM reaches, as a fraction of the dense bf16 peak"
_FP8 = "plateau a large fp8 GEMM reaches, as a fraction of the dense fp8 peak"
_C = ("GEMM dimension at which efficiency halves along that axis (tile quantisation, wave "
      "tails, launch overhead)")
_ATT = "flash-attention plateau on long sequences, as a fraction of the dense bf16 peak"
_MOE = ("seconds per MoE layer and micro-batch (forward and backward) the GPU waits on the host "
        "(the all-to-all dispatcher's token-count synchronisation, the router's and "
        "permutation's small kernels)")
_LIMIT_C = ("the fit drives it to the lower limit of its search (16) on every generation: GEMM "
            "shapes explain little of the spread of these runs, so the data do not fix it")
_ONE_SOURCE = "fitted on the rows of one source (Megatron-Bridge 25.11's performance table)"

_RECORDS = (
    _gemm("ampere", "e_max", 0.78, "fraction", _E_MAX, AMPERE_ROWS,
          (NARAYANAN, TORCHTITAN_A100, FOUNDRY)),
    _gemm("ampere", "c", 16.0, "elements", _C, AMPERE_ROWS, (NARAYANAN, TORCHTITAN_A100, FOUNDRY),
          _LIMIT_C),
    _gemm("ampere", "attention", 0.29, "fraction", _ATT, AMPERE_ROWS,
          (NARAYANAN, TORCHTITAN_A100, FOUNDRY)),
    Constant("gemm.ampere.moe_layer", 0.002, "s", _MOE, "chosen",
             ("compiler/training/gemm.py Curve's default; no Ampere fit row has experts",),
             caveat="no Ampere fit row is an MoE run, so the fit never moved it: nothing fixes "
                    "it on Ampere"),
    _gemm("hopper", "e_max", 0.58, "fraction", _E_MAX, HOPPER_ROWS,
          (MBRIDGE, TORCHTITAN_H100, NEMO, FOUNDRY, AUTOMODEL)),
    _gemm("hopper", "fp8", 0.60, "fraction", _FP8, HOPPER_FP8_ROWS, (MBRIDGE, NEMO),
          "fitted on two fp8 runs, one per source"),
    _gemm("hopper", "c", 16.0, "elements", _C, HOPPER_ROWS,
          (MBRIDGE, TORCHTITAN_H100, NEMO, FOUNDRY, AUTOMODEL), _LIMIT_C),
    _gemm("hopper", "attention", 0.90, "fraction", _ATT, HOPPER_ROWS,
          (MBRIDGE, TORCHTITAN_H100, NEMO, FOUNDRY, AUTOMODEL)),
    _gemm("hopper", "moe_layer", 0.0, "s", _MOE, ("mbridge-2511-h100-gptoss-64-bf16",
                                                   "automodel-h100-qwen3-30b-a3b-8gpu-bf16"),
          (MBRIDGE, AUTOMODEL), "at the lower limit of its search (0) on the two MoE fit rows"),
    Constant("gemm.hopper.attention_fa2", 0.35, "fraction",
             "FlashAttention-2's plateau on an H100 (PyTorch SDPA's flash backend, the flash-attn "
             "2 package), as a fraction of the dense bf16 peak", "chosen",
             ("Shah et al. 2024, FlashAttention-3, sec. 1: FlashAttention-2 reaches 35 % of an "
              "H100's peak",), caveat="a published kernel figure, not a fit"),
    _gemm("blackwell", "e_max", 0.69, "fraction", _E_MAX, BLACKWELL_ROWS, (MBRIDGE,),
          _ONE_SOURCE),
    _gemm("blackwell", "fp8", 0.59, "fraction", _FP8, BLACKWELL_FP8_ROWS, (MBRIDGE,),
          _ONE_SOURCE),
    _gemm("blackwell", "c", 16.0, "elements", _C, BLACKWELL_ROWS, (MBRIDGE,),
          _LIMIT_C + " (32 when the cost per layer and micro-batch was first charged to "
          "Megatron-Core's MoE layers, 16 again after later changes to the collective costs); " +
          _ONE_SOURCE),
    _gemm("blackwell", "attention", 0.40, "fraction", _ATT, BLACKWELL_ROWS, (MBRIDGE,),
          _ONE_SOURCE),
    _gemm("blackwell", "moe_layer", 0.0, "s", _MOE, ("mbridge-2511-gb200-dsv3-256-bf16",),
          (MBRIDGE,), "fitted on one MoE run, at the lower limit of its search (0)"),
    Constant("memory.margin", 0.23, "fraction of HBM",
             "the memory model's measured uncertainty: 1 - 1 / the 90th percentile of measured "
             "over predicted peak memory; the tight band either side of HBM (memory.band)",
             "derived", ("tests/fixtures/training/memory_runs.csv: torchtitan (2 documents) and "
                         "torchao (4 documents), 38 scored rows",
                         "benchmarks/memory_validation.py (margin_from, and left one source out: "
                         "0.166-0.239)"),
             ("every scored row of tests/memory_rows.py",)),
    Constant("memory.runtime_reserve", 2 * 2**30, "bytes",
             "memory per GPU the model does not count byte by byte: the CUDA context, NCCL's "
             "buffers, workspaces, the caching allocator's slack", "chosen",
             ("benchmarks/memory_validation.py: the whole footprint it is part of against 38 "
              "measured peaks",),
             caveat="a round figure; no measurement fixes it apart from the rest of the "
                    "footprint"),
    Constant("compute.hbm_efficiency", 0.5, "fraction",
             "the share of HBM bandwidth element-wise kernels (norms, activations, casts, "
             "eager epilogues) reach", "chosen",
             ("benchmarks/plan_calibration.py: the step times it is part of against the "
              "published runs",), caveat="a round figure, not a fit"),
    Constant("compute.layer_microbatch", 0.00275, "s",
             "seconds per transformer layer and micro-batch on a pipeline stage that no "
             "kernel's size explains, once the host has had to wait for the GPU inside the "
             "layer: under PyTorch's FSDP (not Megatron-FSDP) every layer (the host's per-layer "
             "hooks; FSDP1: the rate limiter's event.synchronize()), under Megatron-Core every "
             "MoE layer that does not drop and pad tokens to capacity (the token "
             "dispatcher's d2h_event.synchronize() on the token counts; Training.token_drop "
             "skips it) (compute.fixed_per_layer)", "fitted",
             (FOUNDRY, TORCHTITAN_H100, TORCHTITAN_A100, AUTOMODEL, MBRIDGE,
              "pytorch/ao torchao float8 training benchmarks",
              "alibaba/Pai-Megatron-Patch issue 658",
              "NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py "
              "(_maybe_dtoh_and_synchronize: self.d2h_event.synchronize() at the dispatcher's "
              "cuda_sync_point, before_ep_alltoall with ep or tp > 1, only if not "
              "self.drop_and_pad)",
              "NVIDIA/Megatron-LM megatron/core/models/common/model_chunk_schedule_plan.py "
              "(TransformerLayerSchedulePlan.run: under the EP A2A overlap the other "
              "micro-batch's expert backward is issued between the copy and the wait)",
              "benchmarks/plan_calibration.py --fit (fit_globals: coordinate descent on every "
              "scored row and every group of alternatives, each group centred on its own "
              "level; benchmarks/plan_validation.py refits it with each source left out)"),
             ("every scored row of tests/training_rows.py and every group of "
              "tests/training_orderings.py; the PyTorch-FSDP ones (llm-foundry, torchtitan, "
              "torchao, NeMo AutoModel) and the Megatron-Core MoE ones (Megatron-Bridge's MoE "
              "rows, Pai-Megatron-Patch's group) move it",), row_count=112,
             caveat="fitted at 2.75 ms on the rows and groups of six sources of two framework "
                    "families (PyTorch FSDP; Megatron-Core's MoE layers); left one source out "
                    "it stays within 2.5-3.25 ms (3.5 ms and 2.75-3.75 ms while the EP A2A "
                    "overlap's paired passes still paid, when Megatron-Bridge's Qwen3-30B row "
                    "on 16 H100s, 50 % under, held it up); no source gives the seconds from "
                    "code (a "
                    "layer's launches at host_launch, 1.4-1.8 ms, are its floor); "
                    "llm-foundry's rows alone ask for about 5 ms; Megatron-Bridge's large MoE "
                    "rows on GB200 (Qwen3-235B, DeepSeek-V3 FP8-MX, CUDA graphs on the router "
                    "and dispatch preprocessing) are over-charged by it (+17 % to +24 % held "
                    "out); "
                    "charged to BLOOM's launch-blocking Megatron-DeepSpeed as well "
                    "(one value across both families) it orders 87 % of the pairs but costs "
                    "four winners and 0.8 points of the held-out 90th percentile, so it is not "
                    "(docs/plan.md, Orderings); Megatron-Bridge 25.09's token-drop DeepSeek-V3 "
                    "runs, which never wait on the host, are predicted 24 % and 31 % fast "
                    "without it (8 % and 18 % with it): on Megatron-Core's MoE layers it is not "
                    "the dispatcher's wait alone"),
    Constant("fp8.rowwise_forward_gemm", 0.95, "fraction",
             "the forward GEMM's rate under torchao's rowwise fp8 recipe (PyTorch's CUTLASS "
             "row-scaled kernel with fast accumulation) over the tensorwise cuBLAS kernel's at "
             "the same shape (compiler/training/fp8.py)", "chosen",
             ("pytorch/pytorch issue 147971 (2025-02-26, H100): with fast_accum=True \"most "
              "shapes are within 90-100% of tensor-wise efficiency, but there's a long tail "
              "going down to 50%\"",),
             caveat="the middle of the range the kernel benchmark states, not a fit; its long "
                    "tail of slower shapes is not modelled"),
    Constant("compute.host_launch", 20e-6, "s",
             "host time to issue one kernel from an eager PyTorch module (Python, the "
             "dispatcher, autograd bookkeeping, cudaLaunchKernel)", "chosen",
             ("benchmarks/README.md: the host-bound rows reported at 10 and 30 us as well",
              "Narayanan et al. 2021's ZeRO-3 rows bound it from above where it is charged per "
              "rank and call to DeepSpeed's per-rank copies (compiler/training/zero3.py): at "
              "1,536 ranks the 174.6B step leaves room for at most about 21 us with the calls "
              "counted, 15 us with GPT's bias calls too"),
             caveat="an order-of-magnitude figure, not fitted; the ZeRO-3 per-rank copies "
                    "(a Python narrow and a C++ copy a rank) read it too"),
)

#: Serving (``topoc infer``): fitted by ``benchmarks/infer_validation.py --fit`` on its fit rows
#: (every third usable row of tests/serving_rows.py, in file order), docs/infer.md.
INFER_FIT = ("benchmarks/infer_validation.py --fit on the fit third of tests/serving_rows.py "
             "(docs/infer.md lists the rows and their sources)",)
_INFER = (
    ("gemm_efficiency", 0.509, "fraction", "decode GEMMs' share of the precision's dense peak"),
    ("prefill_efficiency", 0.526, "fraction", "prefill GEMMs' and attention's share of the "
                                              "precision's dense peak"),
    ("hbm_efficiency", 0.947, "fraction", "share of HBM bandwidth streaming weights and the KV "
                                          "cache reaches"),
    ("layer_overhead", 2.30e-5, "s", "time per layer and engine step outside GEMMs and "
                                     "streaming: launches, norms, synchronisation"),
    ("step_overhead", 1.03e-3, "s", "time per engine step on the host: scheduling, sampling"),
    ("expert_tile", 235.6, "rows", "rows of a grouped-GEMM tile: an expert with m tokens runs at "
                                   "m / (m + expert_tile) of the GEMM rate"),
    ("fp4_efficiency", 0.557, "fraction", "FP4 GEMMs' further share of the FP4 peak"),
    ("request_overhead", 0.0056, "s", "time per request before its prefill: API, tokenizer, "
                                      "queue"),
    ("gemm_width", 44.0, "columns", "columns per GPU at which a GEMM runs at half speed"),
    ("collective_overhead", 2.58e-5, "s", "time per tensor-parallel collective in a step beyond "
                                          "the wire: its kernel launch and the group's barrier"),
    ("sequence_overhead", 1.74e-5, "s", "host work per running sequence and step: scheduling, "
                                        "sampling, detokenisation, inputs"),
    ("closed_loop_share", 0.33, "exponent", "the wave's TTFT's weight in the geometric "
                                            "interpolation between the steady and the wave TTFT "
                                            "of a closed-loop benchmark (empirical; "
                                            "--fit-closed-loop)"),
)
#: The serving sources, as tests/serving_runs.csv names them by address (its ``source``
#: column; benchmarks/infer_validation.py ``SOURCES`` groups the rows the same way).
SERVING_DOCS = {
    "trtllm-0.19": "NVIDIA TensorRT-LLM performance overview, 0.19 (nvidia.github.io/"
                   "TensorRT-LLM/0.19.0/performance/perf-overview.html)",
    "trtllm-1.0": "NVIDIA TensorRT-LLM performance overview, 1.0 (github NVIDIA/TensorRT-LLM "
                  "@00f37686 docs/source/performance/perf-overview.md)",
    "trtllm-1.x": "NVIDIA TensorRT-LLM performance overview, 1.x (nvidia.github.io/"
                  "TensorRT-LLM/developer-guide/perf-overview.html)",
    "nim": "NVIDIA NIM LLM benchmarking 1.0.0 (docs.nvidia.com/nim/benchmarking/llm/1.0.0/"
           "performance)",
    "gpustack": "GPUStack performance lab (github gpustack/gpustack docs/performance-lab)",
}
#: Each fitted serving constant's rows: the fit rows of tests/serving_rows.py with a check
#: whose prediction moves by more than 0.5 % when the constant moves by 10 %
#: (``closed_loop_share``: the loaded-TTFT fit checks its own fit reads), and their sources.
#: ``benchmarks/infer_validation.py --constants`` recomputes them and says where they differ.
INFER_ROWS = {
    "gemm_efficiency": (
        ("r001", "r004", "r007", "r010", "r016", "r019", "r022", "r025", "r034", "r043", "r046",
         "r049", "r052", "r058", "r061", "r067", "r073", "r076", "r085", "r088", "r094", "r097",
         "r100", "r103", "r112", "r153", "r156", "r165", "r174", "r213"),
        ("trtllm-0.19", "trtllm-1.0", "trtllm-1.x", "gpustack", "nim")),
    "prefill_efficiency": (
        ("r001", "r004", "r007", "r019", "r022", "r025", "r028", "r031", "r034", "r037", "r040",
         "r043", "r046", "r049", "r052", "r055", "r058", "r061", "r064", "r067", "r070", "r073",
         "r076", "r079", "r082", "r085", "r088", "r091", "r094", "r100", "r103", "r106", "r109",
         "r112", "r120", "r123", "r126", "r150", "r153", "r156", "r162", "r165", "r168", "r171",
         "r177", "r180", "r183", "r186", "r189", "r192", "r195", "r198", "r201", "r204", "r207",
         "r210", "r213", "r216", "r219", "r222", "r225", "r228"),
        ("trtllm-0.19", "trtllm-1.0", "trtllm-1.x", "nim", "gpustack")),
    "hbm_efficiency": (
        ("r010", "r013", "r016", "r019", "r022", "r034", "r037", "r040", "r046", "r049", "r052",
         "r055", "r058", "r061", "r064", "r073", "r079", "r082", "r085", "r088", "r103", "r106",
         "r109", "r112", "r120", "r123", "r126", "r150", "r159", "r162", "r165", "r168", "r171",
         "r174", "r177", "r180", "r183", "r186", "r189", "r192", "r195", "r198", "r201", "r204",
         "r207", "r210", "r216", "r219", "r222", "r225", "r228"),
        ("trtllm-0.19", "trtllm-1.0", "trtllm-1.x", "nim", "gpustack")),
    "layer_overhead": (
        ("r013", "r049", "r120", "r150", "r159", "r162", "r165", "r168", "r171", "r177", "r180",
         "r183", "r192", "r201", "r204", "r207", "r210", "r216", "r222"),
        ("trtllm-0.19", "nim", "gpustack")),
    "step_overhead": (
        ("r150", "r159", "r162", "r165", "r168", "r171", "r174", "r177", "r180", "r183", "r186",
         "r192", "r207", "r222"),
        ("gpustack", "nim")),
    "fp4_efficiency": (
        ("r043", "r046", "r049", "r052", "r055", "r076", "r079", "r091", "r094", "r097", "r100",
         "r103", "r106"),
        ("trtllm-0.19", "trtllm-1.0", "trtllm-1.x")),
    "expert_tile": (
        ("r085", "r088", "r094", "r097", "r100", "r112", "r153", "r156"),
        ("trtllm-1.0", "trtllm-1.x", "gpustack")),
    "request_overhead": (
        ("r150", "r159", "r162", "r168", "r171", "r177", "r180", "r183", "r201", "r204", "r207",
         "r210"),
        ("gpustack", "nim")),
    "gemm_width": (
        ("r153", "r156"),
        ("gpustack",)),
    "collective_overhead": (
        ("r010", "r016", "r022", "r043", "r046", "r052", "r055", "r082", "r085", "r088", "r097",
         "r109", "r120", "r201", "r204", "r207", "r210", "r213", "r216", "r219", "r222", "r225",
         "r228"),
        ("trtllm-0.19", "trtllm-1.0", "trtllm-1.x", "nim")),
    "sequence_overhead": (
        ("r091", "r153", "r162", "r165", "r171", "r174", "r177", "r180", "r189", "r204", "r210",
         "r213", "r219"),
        ("trtllm-1.0", "gpustack", "nim")),
    "closed_loop_share": (
        ("r120", "r150", "r162", "r168", "r171", "r177", "r180", "r186", "r192", "r201", "r204",
         "r207", "r210", "r216", "r219"),
        ("nim", "gpustack")),
}

#: What a constant resting (almost) on one source's rows is not fixed by.
INFER_CAVEATS = {
    "gemm_width": "fitted on one source's rows: only GPUStack's DeepSeek-R1 bursts (r153, r156; "
                  "256 expert columns per GPU) move it",
    "step_overhead": "all but one of its rows are one source's (NIM's tables; one GPUStack "
                     "row): a fold without NIM cannot fix it",
    "request_overhead": "all but one of its rows are one source's (NIM's tables; one GPUStack "
                        "row): a fold without NIM cannot fix it",
    "closed_loop_share": "all but one of its rows are one source's (NIM's loaded TTFT; one "
                         "GPUStack row)",
}
_RECORDS += tuple(Constant(f"infer.{k}", v, unit, meaning, "fitted",
                           tuple(SERVING_DOCS[s] for s in INFER_ROWS[k][1]) + INFER_FIT,
                           INFER_ROWS[k][0], INFER_CAVEATS.get(k, ""))
                  for k, v, unit, meaning in _INFER)

REGISTRY: dict[str, Constant] = {c.name: c for c in _RECORDS}


def value(name: str) -> Any:
    """The value of constant ``name`` (KeyError for a name the registry does not hold)."""
    return REGISTRY[name].value
