"""Megatron-Core's EP A2A overlap (``--overlap-moe-expert-parallel-comm``; Megatron-Bridge's
``comm_overlap.overlap_moe_expert_parallel_comm``, its performance recipes' ``moe_a2a_overlap``):
the expert all-to-alls of one micro-batch run behind another micro-batch's compute.

How Megatron-Core runs it (Megatron Core MoE README, "Batch-level overlapping to hide EP-A2A
communication", MCore v0.14; ``TransformerConfig.__post_init__``'s checks):

- **Which schedules.** The forward of one micro-batch and the backward of another are merged
  layer by layer (the "combined 1F1B" schedule plan), so only the steady phase of a schedule
  pairs passes: with no pipeline, every pass but the first forward and the last backward;
  with a pipeline, only the interleaved schedule (the config asserts a virtual pipeline size
  when pp > 1), whose warm-up forwards and cool-down backwards run alone. DeepSeek's DualPipe
  (technical report, arXiv:2412.19437, sec. 3.2.1) pairs a forward and a backward chunk the
  same way in its steady phase, so ``dualpipe`` allows it under a plain pipeline too.
- **Which runs.** Expert parallelism above 1, and not with full recompute (the config asserts
  ``recompute_granularity != 'full'``: a checkpointed layer has no per-module backward to
  interleave). Elsewhere the option has no effect: Megatron-Core refuses the flag, so such a
  run goes without it and its all-to-all stays on the critical path.
- **What it hides.** The dispatch and combine all-to-alls (forward and backward) of the paired
  passes, behind the other micro-batch's attention and MLP compute: at most the compute of the
  paired passes (``window``). Warm-up and cool-down all-to-alls stay exposed.
- **What it costs.** The all-to-all's kernels occupy streaming multiprocessors while the
  compute runs: ``COMM_SMS`` of the GPU's ``SMS``, so every hidden second of all-to-all slows
  the compute beside it by that share (``sm_share``).

Off by default (Megatron-Core's default); a run turns it on with ``ep_overlap`` (the
``--ep-overlap`` flag of ``topoc plan``, the ``ep_overlap`` setting of a ``parallel`` block, or
``Training(ep_overlap=True)``).
"""

from __future__ import annotations

from .mapping import Shape

#: Streaming multiprocessors the all-to-all kernels take: DeepSeek-V3's report (sec. 3.2.2:
#: "only 20 SMs are sufficient to fully utilize the bandwidths of IB and NVLink"), DeepEP's
#: default (``Buffer.num_sms = 20``) and Megatron-Core's ``--moe-deepep-num-sms`` default (20).
COMM_SMS = 20
#: SMs per GPU by generation: A100 108, H100/H800/H200 SXM 132, B200/GB200 148 (NVIDIA's
#: A100, H100 and Blackwell architecture whitepapers).
SMS = {"ampere": 108, "hopper": 132, "blackwell": 148}


def applies(t, sh: Shape) -> bool:
    """Whether Megatron-Core runs the EP A2A overlap for training ``t`` on shape ``sh``."""
    return t.ep_overlap and sh.ep > 1 and t.recompute != "full" and \
        (sh.pp == 1 or t.interleave > 1 or t.dualpipe)


def warmup(sh: Shape, microbatches: int, interleave: int) -> int:
    """Chunk passes that run alone on pipeline rank 0 (the most): its warm-up forwards, as
    many cool-down backwards. Megatron's interleaved schedule warms up (P - 1) x 2 + (V - 1) x P
    forwards on rank 0, 1F1B P - 1; with no pipeline the first forward (and last backward)."""
    passes = microbatches * interleave
    if sh.pp == 1:
        return min(passes, 1)
    if interleave > 1:
        return min(passes, (sh.pp - 1) * 2 + (interleave - 1) * sh.pp)
    return min(passes, sh.pp - 1)


def paired(t, sh: Shape, microbatches: int) -> float:
    """Share of a step's forward and backward chunk passes that run paired with another
    micro-batch's pass (0 when the overlap does not apply)."""
    if not applies(t, sh):
        return 0.0
    passes = microbatches * t.interleave
    return max(0, passes - warmup(sh, microbatches, t.interleave)) / passes


def sm_share(gpu_generation: str) -> float:
    """Share of the GPU's SMs the all-to-all takes from the compute it overlaps."""
    return COMM_SMS / SMS.get(gpu_generation, SMS["hopper"])
