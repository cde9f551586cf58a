"""The element-wise work a framework runs in eager PyTorch around a GPT-OSS-style expert:
the clamp of its gated activation's inputs and the experts' output biases.

GPT-OSS (openai/gpt-oss-120b config.json ``swiglu_limit`` 7.0; the model card, sec. 2.1)
clamps the gate to at most 7 and the linear half to [-7, 7] before its SwiGLU, and every
expert's two linear layers carry a bias (the checkpoint's ``gate_up_proj_bias`` and
``down_proj_bias``). A model declares them with ``act_clamp`` and ``expert_bias``. Where the
framework leaves these outside its fused kernels, each is one or more extra passes of a routed
token's expert activations through HBM, which ``compute`` costs like the other element-wise
work (at ``hbm_efficiency`` of the bandwidth), and a few kernel launches per local expert.

How each implementation runs them (``expert_epilogue``; bytes per routed copy of a token, W
the expert width after expert tensor parallelism, H the hidden size, bf16 tensors):

- ``megatron``: Megatron-Core's ``TEGroupedMLP`` as NeMo 25.11 and 26.02 ship it
  (Megatron-LM at Megatron-Bridge v0.2.0's and v0.3.0's submodule commits, 0d8e0714 and
  b0cc2706; unchanged at core_v0.17). fc1's bias is added in Transformer Engine's grouped
  GEMM (``skip_bias_add=False``). ``fusions/fused_bias_geglu.py``'s
  ``weighted_bias_quick_geglu_impl`` clamps outside the fused kernel: ``input.chunk(2)``, a
  ``clamp`` on each half and a ``torch.cat`` of the two, then the compiled activation. Forward:
  two clamps (read and write W each, 8W) and the cat (read and write 2W, 8W): 16W. Backward:
  each clamp's gradient reads the gradient and the input and writes one (12W), and the chunk's
  backward joins the halves (8W): 20W. A recompute of the activation (``moe_act``, or a full
  recompute) runs the forward again (16W). fc2's bias (``skip_bias_add=True``) is added by
  ``TEGroupedMLP._apply_bias``: per local expert ``t + b * p`` (the router's probability times
  the bias: written, 2H; the sum reads 4H and writes 2H) and a ``torch.cat`` of the experts'
  slices (4H): 12H forward; backward, the bias's and the probability's gradients each a
  product and a reduction of the output gradient (6H each): 12H; again forward under a full
  recompute (``_apply_bias`` is outside the ``moe_act`` checkpoint).
- ``eager_bias``: NeMo AutoModel's ``GroupedExpertsDeepEP`` (``components/moe/layers.py`` at
  037e04a6, the commit of its GPT-OSS benchmark config): the clamp is inside the
  ``torch.compile``'d ``quick_geglu_deepep`` (no extra pass); both biases go through its
  ``_apply_bias``: fc1's per expert ``t + b`` and a cat (16W forward; backward the bias's
  reduction, 4W), fc2's with the probability as Megatron-Core's (12H forward, 12H backward).
  Its benchmark runs no activation checkpointing.
- ``fused``: clamp and biases inside the GEMMs and the activation kernel: nothing extra.

Launches: the per-expert bias adds two kernels per local expert forward and four backward;
they count in ``compute.host_bound``'s expert segment.
"""

from __future__ import annotations

from ..ir.system import Transformer
from .mapping import Shape

#: Implementations of the clamp and the expert biases: Megatron-Core's TEGroupedMLP (NeMo
#: 25.11/26.02; the default, as topoc's other kernels follow Megatron-Core), NeMo AutoModel's
#: DeepEP experts, and none left outside the fused kernels.
EXPERT_EPILOGUES = ("megatron", "eager_bias", "fused")


def _act_recomputed(t) -> bool:
    """Whether a selective recompute names the experts' activation (as ``memory.modules``)."""
    return t.recompute == "selective" and not t.fsdp and "moe_act" in t.recompute_modules


def applies(m: Transformer) -> bool:
    """Whether the model has anything an epilogue would run: a clamp or expert biases."""
    return bool(m.experts and (m.act_clamp or m.expert_bias))


def bytes_per_token(m: Transformer, t, sh: Shape) -> tuple[float, float, float]:
    """(forward, backward, recompute forward) bytes of eager element-wise traffic per token of
    one MoE layer's micro-batch on one GPU; the recompute part is what a recompute of the
    layer's activation (``moe_act`` or full) or of the whole layer (full) redoes."""
    kind = t.expert_epilogue
    if kind == "fused" or not applies(m):
        return 0.0, 0.0, 0.0
    load = t.imbalance if not m.capacity_factor else min(t.imbalance, m.capacity_factor)
    copies = m.top_k * load * sh.etp / sh.tp      # routed copies of a token this GPU's experts see
    w = m.expert_ffn / sh.etp
    h = m.hidden
    fwd = bwd = again = 0.0
    full = t.recompute == "full"
    act_redone = full or _act_recomputed(t)
    if kind == "megatron":
        if m.act_clamp:
            fwd += 16 * w
            bwd += 20 * w
            again += 16 * w if act_redone else 0.0
        if m.expert_bias:                          # fc2's bias; fc1's is in the GEMM
            fwd += 12 * h
            bwd += 12 * h
            again += 12 * h if full else 0.0
    elif kind == "eager_bias" and m.expert_bias:
        fwd += 16 * w + 12 * h
        bwd += 4 * w + 12 * h
        again += (16 * w + 12 * h) if full else 0.0
    return copies * fwd, copies * bwd, copies * again


def launches(m: Transformer, t, local: int) -> tuple[int, int]:
    """(forward, backward) extra kernels of one MoE layer on a GPU with ``local`` experts."""
    if t.expert_epilogue == "fused" or not applies(m):
        return 0, 0
    fwd = bwd = 0
    if m.act_clamp and t.expert_epilogue == "megatron":
        fwd, bwd = 3, 3                    # two clamps and the cat; their gradients
    biased = (1 if t.expert_epilogue == "megatron" else 2) if m.expert_bias else 0
    return fwd + biased * (2 * local + 1), bwd + biased * 4 * local


def kept_bytes(m: Transformer, t) -> float:
    """Activation bytes per routed copy the epilogue keeps beyond the fused activation's
    input: Megatron-Core's clamp keeps the raw fc1 output for its gradient (4W) unless the
    activation is recomputed."""
    if t.expert_epilogue != "megatron" or not m.act_clamp or not m.experts:
        return 0.0
    if t.recompute == "full" or _act_recomputed(t):
        return 0.0
    return 4.0 * m.expert_ffn
