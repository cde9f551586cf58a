"""Which all-reduce a serving engine runs for a tensor-parallel all-reduce of a given size on a
given number of GPUs: its own peer-memory kernels (``algos.oneshot``: ``oneshot``,
``twoshot``, ``multimem``) where its rule picks them, NCCL otherwise. One record per engine
(``ENGINES``), each rule read from the engine's source:

- ``trtllm``: TensorRT-LLM's PyTorch backend (the LLM API, trtllm-serve), AUTO strategy
  (cpp/tensorrt_llm/thop/allreduceOp.cpp ``AllreduceOp::selectImplementation``,
  cpp/tensorrt_llm/common/customAllReduceUtils.h ``selectStrategyLookUpTable``): NCCL without
  peer access over NVLink or past the workspace (``getMaxRequiredWorkspaceSize``: 16 MB on 2
  GPUs, 8 MB on more, decimal); otherwise a table measured per GPU generation (SM90 for
  Hopper and older, SM100 for Blackwell), TP (2, 4, 8: ``log2(tp) - 1``, so 3 reads TP2's and
  5-7 TP4's), hidden size (``log2(hidden) - 7``: 128 to 8,192) and tokens (``log2(tokens)``:
  1 to 16,384) gives one-shot, two-shot or NCCL; a cell past the table (16 GPUs, a hidden size
  over 16,383, more than 32,767 tokens) is NCCL. The table read is the one of the decoder's
  fusion, all-reduce + residual add + RMSNorm in one kernel (``AllReduceFusionOp::
  RESIDUAL_RMS_NORM``, what the PyTorch backend's Llama, Qwen and DeepSeek layers ask for at
  TP > 1): the norm runs inside the all-reduce (``fused_norm``). Decode sizes are one-shot;
  at 8,192 hidden TP8 goes to NCCL from 64 tokens, TP4 from 512, TP2 from 1,024.
- ``vllm``: vLLM's CUDA communicator (vllm/distributed/device_communicators/
  cuda_communicator.py ``all_reduce``: the custom all-reduce, then torch's symmetric memory,
  then NCCL). The custom all-reduce (custom_all_reduce.py; world sizes 2, 4, 6, 8, fully
  NVLink-connected or 2 GPUs) takes inputs under ``max_size``: 8 MiB, capped with symmetric
  memory on (``VLLM_ALLREDUCE_USE_SYMM_MEM``, default 1 in vllm/envs.py) by
  all_reduce_utils.py ``CUSTOM_ALL_REDUCE_MAX_SIZES`` (Hopper: 2 and 4 GPUs 64 / 32 MiB, 6
  GPUs 512 KiB, 8 GPUs 256 KiB; Blackwell 2 / 2 / 1 / 1 MiB); 1-stage on 2 GPUs, under 512 KiB
  on up to 4, under 256 KiB on up to 8, 2-stage otherwise (csrc/custom_all_reduce.cuh,
  REDUCE_CASE). Past it, symmetric memory up to ``SYMM_MEM_ALL_REDUCE_MAX_SIZES`` (Hopper 64 /
  32 / 64 / 64 MiB, Blackwell 8 / 32 / 128 / 128 MiB): ``multimem_all_reduce_`` on the world
  sizes of ``SymmMemCommunicator._WORLD_SIZES_MULTIMEM`` (Hopper 4, 6, 8; Blackwell 6, 8),
  two-shot otherwise (symm_mem.py); NCCL past that. Older GPUs (no symmetric memory): the
  custom all-reduce under 8 MiB, NCCL past it.
- ``trtllm-1.0``: TensorRT-LLM before that table, and its TensorRT workflow (the engines NIM's
  LLM containers run): cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp
  ``AllreducePlugin::selectImplementation``: NCCL past the workspace (16 MB on 2 GPUs, 8 MB on
  more); one-shot on 2 GPUs; one-shot under 1,000,000 bytes on 3-4 GPUs, under 500,000 on more;
  two-shot otherwise (some releases send those to NCCL, a workaround for a two-shot slowdown:
  not modelled). Its reduce fusion is a build option (``--reduce_fusion``, off by default).
- ``vllm-0.11``: vLLM's custom all-reduce alone, under 8 MiB (the rule before symmetric memory
  capped it; whether v0.11's symmetric-memory path was on by default is not settled from the
  sources read, so the validation's vLLM rows take this rule); NCCL past it.
- ``sglang``: SGLang runs vLLM's custom all-reduce kernels with their 8 MiB limit
  (sgl-kernel/csrc/allreduce/custom_all_reduce.cuh, the same REDUCE_CASE thresholds); its
  torch symmetric-memory all-reduce is opt-in (``--enable-torch-symm-mem``), not modelled.

Outside a rule (more GPUs than the engine's kernels take, a group over more than one NVLink
domain, a size past the limit) the engine calls NCCL: ``fallback``, the collective model's
chooser for it. The algorithm picked is then costed by the one coster (``coster.Coster``)
exactly as ``topoc cost --algorithm NAME`` costs it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

KIB, MIB = 1024, 1024 * 1024
KB, MB = 1000, 1000 * 1000          # TensorRT-LLM's thresholds are decimal
HOPPER, BLACKWELL = 2, 3            # tuning.arch_index of SM90 and SM100
#: The activations an all-reduce carries, bytes per value (BF16): its size over this and the
#: hidden size is the tokens TensorRT-LLM's table is indexed by.
ACT_BYTES = 2
#: The hidden size taken when the caller gives none (the table's largest row).
DEFAULT_HIDDEN = 8192


@attrs.frozen
class EngineAllReduce:
    """An engine's all-reduce rule: ``pick(ranks, size, arch, hidden)`` gives the algorithm's
    name, or None for NCCL (``fallback``); ``fused_norm``: its decoder fuses the residual add
    and RMSNorm into the all-reduce kernel (its table is that fusion's)."""

    name: str
    pick: Callable[[int, int, int, int], str | None]
    fallback: str = "fastest"
    fused_norm: bool = False


#: TensorRT-LLM's strategy table for AllReduceFusionOp::RESIDUAL_RMS_NORM
#: (customAllReduceUtils.h AllReduceBestStrategyTableSM90 / SM100, fusion index 1): per GPU
#: generation, TP (2, 4, 8), hidden size (128 ... 8,192, one string each) and tokens (1 ...
#: 16,384, one character each): 4 ONESHOT, 5 TWOSHOT, 0 NCCL.
TRTLLM_TABLE = {
    HOPPER: (
        ("444444444444000", "444444444444400", "444455554444000", "444444554544000",
         "444544444444000", "444454444440000", "444444444400000"),
        ("444444444444000", "444444444440000", "444444544445000", "444444444455000",
         "444444444550000", "444444444500000", "444444445000000"),
        ("444444444440000", "444444444450000", "444444444455000", "444444444555000",
         "444444440550000", "444444400000000", "444444000000000")),
    BLACKWELL: (
        ("444454444444000", "444444444444000", "444454445444400", "444444444444400",
         "444444444444000", "444444444440000", "444444444400000"),
        ("444444444444000", "444444444444000", "444444444444000", "444444444445000",
         "444444444450000", "444444444500000", "444444444000000"),
        ("444444444444000", "444444444444000", "444444444440000", "444444444455000",
         "444444444450000", "444444444500000", "444444445000000")),
}
TRTLLM_PICK = {"4": "oneshot", "5": "twoshot", "0": None}


def _trtllm(n: int, size: int, arch: int, hidden: int) -> str | None:
    if size > (16 * MB if n <= 2 else 8 * MB) or n < 2:
        return None
    tokens = max(1, size // (hidden * ACT_BYTES))
    tp_i = int(math.log2(n)) - 1
    hidden_i = int(math.log2(hidden)) - 7
    token_i = int(math.log2(tokens))
    table = TRTLLM_TABLE[BLACKWELL if arch >= BLACKWELL else HOPPER]
    if not (0 <= tp_i < len(table) and 0 <= hidden_i < len(table[tp_i])
            and token_i < len(table[tp_i][hidden_i])):
        return None
    return TRTLLM_PICK[table[tp_i][hidden_i][token_i]]


def _trtllm_plugin(n: int, size: int, arch: int, hidden: int) -> str | None:
    if size > (16 * MB if n <= 2 else 8 * MB) or n > 8:
        return None
    if n <= 2:
        return "oneshot"
    if size < (1 * MB if n <= 4 else 500 * KB):
        return "oneshot"
    return "twoshot"


def _custom(n: int, size: int, limit: int) -> str | None:
    """vLLM's custom all-reduce (and SGLang's copy of it) under ``limit`` bytes."""
    if n not in (2, 4, 6, 8) or size >= limit:
        return None
    if n == 2 or (n <= 4 and size < 512 * KIB) or size < 256 * KIB:
        return "oneshot"
    return "twoshot"


#: vLLM all_reduce_utils.py: the custom all-reduce's cap with symmetric memory on, the
#: symmetric-memory all-reduce's limit, and the world sizes that run multimem (symm_mem.py).
VLLM_CUSTOM_MAX = {HOPPER: {2: 64 * MIB, 4: 32 * MIB, 6: 512 * KIB, 8: 256 * KIB},
                   BLACKWELL: {2: 2 * MIB, 4: 2 * MIB, 6: 1 * MIB, 8: 1 * MIB}}
VLLM_SYMM_MAX = {HOPPER: {2: 64 * MIB, 4: 32 * MIB, 6: 64 * MIB, 8: 64 * MIB},
                 BLACKWELL: {2: 8 * MIB, 4: 32 * MIB, 6: 128 * MIB, 8: 128 * MIB}}
VLLM_MULTIMEM = {HOPPER: (4, 6, 8), BLACKWELL: (6, 8)}


def _vllm(n: int, size: int, arch: int, hidden: int) -> str | None:
    gen = min(arch, BLACKWELL)
    if gen not in VLLM_SYMM_MAX:
        return _custom(n, size, 8 * MIB)
    custom = _custom(n, size, min(8 * MIB, VLLM_CUSTOM_MAX[gen].get(n, 0)))
    if custom:
        return custom
    if n in VLLM_SYMM_MAX[gen] and size <= VLLM_SYMM_MAX[gen][n]:
        return "multimem" if n in VLLM_MULTIMEM[gen] else "twoshot"
    return None


def _sglang(n: int, size: int, arch: int, hidden: int) -> str | None:
    return _custom(n, size, 8 * MIB)


ENGINES: dict[str, EngineAllReduce] = {e.name: e for e in (
    EngineAllReduce("trtllm", _trtllm, fused_norm=True),
    EngineAllReduce("vllm", _vllm),
    EngineAllReduce("sglang", _sglang),
    EngineAllReduce("trtllm-1.0", _trtllm_plugin),
    EngineAllReduce("vllm-0.11", _sglang),
)}


def algorithm(engine: str, collective: str, ranks: int, size: int, one_domain: bool,
              arch: int = HOPPER, hidden: int | None = None) -> str:
    """The algorithm (or chooser) ``engine`` runs ``collective`` with on ``ranks`` GPUs at
    ``size`` bytes; ``one_domain``: the group is inside one NVLink domain; ``arch``: the GPUs'
    generation (``tuning.arch_index``); ``hidden``: the model's hidden size (TensorRT-LLM's
    table is indexed by it and by the tokens, ``size`` / (hidden x 2))."""
    rule = ENGINES[engine]
    if collective != "allreduce" or not one_domain:
        return rule.fallback
    return rule.pick(ranks, size, arch, hidden or DEFAULT_HIDDEN) or rule.fallback
