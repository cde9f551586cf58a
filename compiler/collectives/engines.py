"""Which all-reduce a serving engine runs for a tensor-parallel all-reduce of a given size on a
given number of GPUs: its own peer-memory kernels (``algos.oneshot``: ``oneshot``,
``twoshot``) where its rule picks them, NCCL otherwise. One record per engine (``ENGINES``),
each rule read from the engine's source:

- ``trtllm``: TensorRT-LLM's AUTO strategy (cpp/tensorrt_llm/plugins/ncclPlugin/
  allreducePlugin.cpp ``AllreducePlugin::selectImplementation``, with
  ``utils::customAllReduceUtils::getMaxRequiredWorkspaceSize``): NCCL without peer access
  over NVLink or past the workspace (16 MB on 2 GPUs, 8 MB on more, decimal); one-shot on 2
  GPUs; one-shot under 1,000,000 bytes on 3-4 GPUs, under 500,000 on more; two-shot otherwise
  (some releases send those to NCCL instead, a workaround for a two-shot slowdown: not
  modelled).
- ``vllm``: vLLM's custom all-reduce (vllm/distributed/device_communicators/custom_all_reduce.py:
  world sizes 2, 4, 6, 8, fully NVLink-connected or 2 GPUs, inputs under ``max_size`` 8 MiB;
  csrc/custom_all_reduce.cuh ``CustomAllreduce::allreduce``, REDUCE_CASE: 1-stage on 2 GPUs,
  under 512 KiB on up to 4, under 256 KiB on up to 8; 2-stage otherwise); NCCL outside that.
- ``sglang``: SGLang runs vLLM's kernels and rule (sgl-kernel/csrc/allreduce/custom_all_reduce.cuh,
  the same REDUCE_CASE thresholds; the same 8 MiB limit).

Outside a rule (more GPUs than the engine's kernels take, a group over more than one NVLink
domain, a size past the limit) the engine calls NCCL: ``fallback``, the collective model's
chooser for it. The algorithm picked is then costed by the one coster (``coster.Coster``)
exactly as ``topoc cost --algorithm NAME`` costs it.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

KIB, MIB = 1024, 1024 * 1024
KB, MB = 1000, 1000 * 1000          # TensorRT-LLM's thresholds are decimal


@attrs.frozen
class EngineAllReduce:
    """An engine's all-reduce rule: ``pick(ranks, size)`` gives the algorithm's name, or None
    for NCCL (``fallback``)."""

    name: str
    pick: Callable[[int, int], str | None]
    fallback: str = "fastest"


def _trtllm(n: int, size: int) -> str | None:
    if size > (16 * MB if n <= 2 else 8 * MB) or n > 8:
        return None
    if n <= 2:
        return "oneshot"
    if size < (1 * MB if n <= 4 else 500 * KB):
        return "oneshot"
    return "twoshot"


def _vllm(n: int, size: int) -> str | None:
    if n not in (2, 4, 6, 8) or size >= 8 * MIB:
        return None
    if n == 2 or (n <= 4 and size < 512 * KIB) or size < 256 * KIB:
        return "oneshot"
    return "twoshot"


ENGINES: dict[str, EngineAllReduce] = {e.name: e for e in (
    EngineAllReduce("trtllm", _trtllm),
    EngineAllReduce("vllm", _vllm),
    EngineAllReduce("sglang", _vllm),
)}


def algorithm(engine: str, collective: str, ranks: int, size: int, one_domain: bool) -> str:
    """The algorithm (or chooser) ``engine`` runs ``collective`` with on ``ranks`` GPUs at
    ``size`` bytes; ``one_domain``: the group is inside one NVLink domain."""
    rule = ENGINES[engine]
    if collective != "allreduce" or not one_domain:
        return rule.fallback
    return rule.pick(ranks, size) or rule.fallback
