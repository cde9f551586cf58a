"""Serving arithmetic that needs no topology: weights and KV cache per GPU by precision and
sharding, and the FLOPs and HBM bytes of a prefill and of one decode step.

Shapes come from the IR's ``Transformer`` (the one description of a model, for training and
serving alike), read as vLLM/TensorRT-LLM lay it out:

- Weights: the attention and MLP matrices at the serving precision (BF16 2 bytes, FP8 1 byte,
  FP4 half a byte plus one FP8 scale per 16 values: NVFP4's block scaling, 0.5625 bytes);
  embeddings, output head, norms and routers stay BF16, as quantised checkpoints keep them.
  Tensor parallelism splits attention (by heads; key/value heads are replicated when fewer than
  tp) and the MLP; expert parallelism splits the routed experts over ``ep`` GPUs, each expert
  further split over ``tp / ep`` (expert tensor parallelism); pipeline parallelism splits the
  layers. With attention data parallelism (``attention_dp``, DeepSeek's and TRT-LLM's "DEP")
  every GPU of the tensor group keeps the whole attention and serves its own sequences.
- KV cache per token: layers x 2 x kv_heads x head_dim x bytes, or for multi-head latent
  attention (``kv_lora_rank``) layers x (kv_lora_rank + rope_head_dim) x bytes, not split by tp
  (every rank of a tensor group needs the whole latent: why MLA models serve with attention DP).
- Decode step at batch B: every weight shard is read once (of the routed experts, only those
  B tokens activate), every sequence's KV cache is read, the GEMMs do 2 x active weights x B
  FLOPs and attention 4 x context x heads x head_dim per token and layer.
- Prefill of T tokens: 2 x active weights x T plus causal attention 2 x T^2 x heads x head_dim
  per layer (half the square).
"""

from __future__ import annotations

import math

import attrs

from ..ir.system import Transformer
from . import params
from .params import moe_layers

#: Bytes per weight or KV element. NVFP4 adds one FP8 scale per 16 values (NVIDIA's NVFP4
#: format); FP8 block scales (one FP32 per 128 x 128 block) are 0.02 % and left out.
BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5 + 1 / 16}
PRECISIONS = tuple(BYTES)
#: Bytes of an activation moved between GPUs (all-reduces, pipeline sends): BF16.
ACT_BYTES = 2


@attrs.frozen
class Layout:
    """How one replica is split: tensor, pipeline and expert parallel sizes; attention data
    parallelism over the tensor group."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    attention_dp: bool = False

    @property
    def gpus(self) -> int:
        """GPUs of one replica."""
        return self.tp * self.pp


class LayoutError(ValueError):
    """A layout the model cannot be split into; the message names the numbers."""


def check(a: Transformer, lay: Layout) -> None:
    """LayoutError when heads, layers or experts do not divide as the layout asks."""
    if lay.tp < 1 or lay.pp < 1 or lay.ep < 1:
        raise LayoutError(f"tp, pp and ep must be at least 1 (tp={lay.tp}, pp={lay.pp}, "
                          f"ep={lay.ep})")
    if not lay.attention_dp and a.heads % lay.tp:
        raise LayoutError(f"{a.name}: {a.heads} attention heads do not divide over "
                          f"tp = {lay.tp}")
    if not lay.attention_dp and not a.kv_lora_rank and a.kv_heads % lay.tp and \
            lay.tp % a.kv_heads:
        raise LayoutError(f"{a.name}: {a.kv_heads} key/value heads do not split over "
                          f"tp = {lay.tp} (nor replicate evenly)")
    dense_mlp = a.layers - moe_layers(a)
    if dense_mlp and a.ffn % lay.tp:
        raise LayoutError(f"{a.name}: the MLP's {a.ffn} columns do not divide over "
                          f"tp = {lay.tp}")
    if a.experts and a.expert_ffn % (lay.tp // lay.ep if lay.tp % lay.ep == 0 else 1):
        raise LayoutError(f"{a.name}: an expert's {a.expert_ffn} columns do not divide over "
                          f"tp / ep = {lay.tp // lay.ep}")
    if lay.pp > a.layers:
        raise LayoutError(f"{a.name}: {a.layers} layers cannot fill pp = {lay.pp} stages")
    if lay.ep > 1:
        if not a.experts:
            raise LayoutError(f"ep = {lay.ep} on {a.name}, which has no experts")
        if a.experts % lay.ep:
            raise LayoutError(f"{a.name}: {a.experts} experts do not divide over ep = {lay.ep}")
        if lay.tp % lay.ep:
            raise LayoutError(f"ep = {lay.ep} must divide tp = {lay.tp} (experts are spread "
                              "over the tensor group)")
    if lay.attention_dp and not a.experts:
        raise LayoutError("attention data parallelism is for mixtures of experts")


# ---- parameters -----------------------------------------------------------------------------

def expert_weights(a: Transformer) -> int:
    """Weights of one routed (or shared) expert."""
    return params.matrices(a) * a.hidden * a.expert_ffn


def totals(a: Transformer) -> dict[str, float]:
    """Weights by part for the whole model, as training counts them (``params.parameters``):
    attention, dense MLP, shared experts, routed experts, and the BF16 extras (embeddings, head,
    norms, routers); ``active`` per token."""
    p = params.parameters(a)
    parts = {"attention": p["attention"], "mlp": p["mlp"], "shared": p["shared"],
             "experts": p["experts"], "extras": p["router"] + p["norms"] + p["embedding"]}
    parts["total"] = p["total"]
    parts["active"] = p["active"]
    return parts


def weight_bytes_per_gpu(a: Transformer, lay: Layout, precision: str) -> float:
    """Bytes of weights on the busiest GPU of a replica."""
    p, b = totals(a), BYTES[precision]
    stage = math.ceil(a.layers / lay.pp) / a.layers
    attn = p["attention"] * (1 if lay.attention_dp else 1 / lay.tp)
    dense = p["mlp"] + p["shared"]
    experts = p["experts"] / lay.tp if a.experts else 0.0   # ep x (tp / ep) shards
    embedding = a.vocab * a.hidden * (1 if a.tied else 2)     # one matrix when tied
    extras = p["extras"] - embedding + embedding / lay.tp     # vocab-parallel embedding, head
    return stage * ((attn + dense / lay.tp + experts) * b) + extras * BYTES["bf16"]


def kv_bytes_per_token(a: Transformer, kv_precision: str) -> float:
    """KV cache bytes one token keeps over all layers (whole model, not split)."""
    if a.kv_lora_rank:
        return a.layers * (a.kv_lora_rank + a.rope_head_dim) * BYTES[kv_precision]
    return a.layers * 2 * a.kv_heads * a.dhead * BYTES[kv_precision]


def kv_bytes_per_token_per_gpu(a: Transformer, lay: Layout, kv_precision: str) -> float:
    """KV bytes one of a GPU's sequences' tokens takes on it: split over pp stages and, for
    grouped heads, over tp (kv heads replicated when fewer than tp); MLA and attention DP keep
    the whole per-layer cache on the GPU that serves the sequence."""
    per = kv_bytes_per_token(a, kv_precision) * math.ceil(a.layers / lay.pp) / a.layers
    if a.kv_lora_rank or lay.attention_dp:
        return per
    return per / min(lay.tp, a.kv_heads) if a.kv_heads else per


def activation_bytes(a: Transformer, lay: Layout, max_tokens: int) -> float:
    """Working memory of one engine step of ``max_tokens`` tokens: the residual stream and the
    widest intermediate (the MLP's or the routed experts', split over tp) in BF16, and FP32
    logits for 1,024 sampled sequences (an estimate, documented in docs/infer.md)."""
    ffn = max(a.ffn if moe_layers(a) < a.layers else 0, a.expert_ffn * max(1, a.top_k))
    width = a.hidden * 4 + 2 * ffn / lay.tp
    return max_tokens * width * ACT_BYTES + 1024 * a.vocab / lay.tp * 4


# ---- work per step ----------------------------------------------------------------------------

@attrs.frozen
class Work:
    """What one GPU does in one step: GEMM FLOPs and weight bytes (routed experts apart),
    attention FLOPs and KV cache bytes."""

    gemm_flops: float
    attn_flops: float
    weight_bytes: float
    kv_bytes: float
    expert_flops: float = 0.0
    expert_bytes: float = 0.0
    #: Rows (tokens) each touched routed expert multiplies: the M of its grouped GEMM
    expert_rows: float = 0.0


def expert_rows(a: Transformer, tokens: float) -> float:
    """Tokens each routed expert that ``tokens`` tokens touch gets on average: tokens x top_k
    spread over the experts touched (each token picks top_k of ``experts`` uniformly)."""
    touched = a.experts * _expert_fraction(a, tokens)
    return tokens * a.top_k / touched if touched else 0.0


def _expert_fraction(a: Transformer, tokens: float) -> float:
    """The expected share of a GPU's routed experts that ``tokens`` tokens touch (each picks
    top_k of ``experts`` uniformly)."""
    if not a.experts or tokens <= 0:
        return 0.0
    return 1.0 - (1.0 - a.top_k / a.experts) ** tokens


def _gemm_weights(a: Transformer, lay: Layout) -> tuple[float, float]:
    """(weights every token of a GPU multiplies, expert weights a routed token multiplies) per
    GPU and stage, in parameters, for the tokens the GPU itself serves."""
    p = totals(a)
    stage = math.ceil(a.layers / lay.pp) / a.layers
    attn = p["attention"] * (1 if lay.attention_dp else 1 / lay.tp)
    dense = (p["mlp"] + p["shared"]) / lay.tp
    head = a.vocab * a.hidden / lay.tp            # the output head (on the last stage)
    routed = moe_layers(a) * a.top_k * expert_weights(a)
    return stage * (attn + dense) + head, stage * routed / lay.tp


def _expert_bytes(a: Transformer, lay: Layout, precision: str) -> float:
    """Bytes of the routed experts on a GPU (one stage)."""
    share = math.ceil(a.layers / lay.pp) / a.layers
    return totals(a)["experts"] / lay.tp * share * BYTES[precision] if a.experts else 0.0


def decode(a: Transformer, lay: Layout, batch: float, context: float, precision: str,
           kv_precision: str) -> Work:
    """One decode step of ``batch`` sequences (per replica; per pipeline stage of a micro-batch
    when pp > 1) at mean ``context`` tokens, on the busiest GPU."""
    every, routed = _gemm_weights(a, lay)
    local = batch / lay.tp if lay.attention_dp else batch     # sequences whose attention it runs
    stage = math.ceil(a.layers / lay.pp)
    heads = a.heads if lay.attention_dp else a.heads / lay.tp
    qk = a.dhead + a.rope_head_dim
    if a.kv_lora_rank:     # absorbed MLA: scores and values in the latent width
        width = heads * (a.kv_lora_rank * 2 + a.rope_head_dim)
    else:
        width = heads * (qk + a.dhead)
    attn = 2 * stage * context * width * local
    ex = _expert_bytes(a, lay, precision)
    wb = weight_bytes_per_gpu(a, lay, precision) - ex
    kv = local * context * kv_bytes_per_token_per_gpu(a, lay, kv_precision)
    # routed experts the batch does not touch are not read
    return Work(2 * every * local, attn, wb, kv, 2 * routed * batch,
                ex * _expert_fraction(a, batch), expert_rows(a, batch))


def prefill(a: Transformer, lay: Layout, tokens: float, precision: str, kv_precision: str) -> Work:
    """The prefill of one request of ``tokens`` tokens on a replica's busiest GPU (attention
    DP: on the one GPU that serves it, its experts spread over the group)."""
    every, routed = _gemm_weights(a, lay)
    stage = math.ceil(a.layers / lay.pp)
    heads = a.heads if lay.attention_dp else a.heads / lay.tp
    qk = a.dhead + a.rope_head_dim
    attn = 2 * stage * tokens * tokens * heads * (qk + a.dhead) / 2     # causal: half
    ex = _expert_bytes(a, lay, precision)
    wb = weight_bytes_per_gpu(a, lay, precision) - ex
    kv = tokens * kv_bytes_per_token_per_gpu(a, lay, kv_precision)      # written once
    return Work(2 * every * tokens, attn, wb, kv, 2 * routed * tokens,
                ex * _expert_fraction(a, tokens), expert_rows(a, tokens))
