"""A transformer's weights and model FLOPs by part, from its declared shape.

Attention is grouped-query (``kv_heads``) with heads of ``dhead`` (hidden / heads unless the
model sets ``head_dim``), or DeepSeek's multi-head latent attention when ``kv_lora_rank`` is
set: queries through a ``q_lora_rank`` bottleneck, keys and values from one compressed latent,
a rotary part of ``rope_head_dim`` per head (DeepSeek-V2 paper, sec. 2.1). MoE layers (all
after ``dense_layers``) have routed experts, ``top_k`` per token, and shared experts.
"""

from __future__ import annotations

from ..ir.system import Transformer


def matrices(m: Transformer) -> int:
    """Weight matrices of one MLP: 3 with a gated (SwiGLU) activation, else 2."""
    return 3 if m.gated else 2


def q_width(m: Transformer) -> int:
    """Width of the queries (and of the output projection's input): heads x head size."""
    return m.heads * m.dhead


def kv_width(m: Transformer) -> int:
    """Width of the keys (or the values) one token writes: kv_heads x head size; for MLA the
    up-projected keys and values of every head."""
    if m.kv_lora_rank:
        return m.heads * (m.dhead + m.rope_head_dim)
    return m.kv_heads * m.dhead


def qk_dim(m: Transformer) -> int:
    """The dot-product width of one head's scores (MLA adds its rotary part)."""
    return m.dhead + m.rope_head_dim


def attention_matrices(m: Transformer) -> tuple[tuple[int, int, str], ...]:
    """The attention projections as (in, out, how tp splits it: "col" the output, "row" the
    input, "rep" not at all): Q, K and V (or MLA's down projections, replicated over tp as
    Megatron runs them, and up projections) and the output projection."""
    h, q = m.hidden, q_width(m)
    if m.kv_lora_rank:
        qk = m.heads * qk_dim(m)
        down = ((h, m.q_lora_rank, "rep"), (m.q_lora_rank, qk, "col")) if m.q_lora_rank else \
            ((h, qk, "col"),)
        return (*down, (h, m.kv_lora_rank + m.rope_head_dim, "rep"),
                (m.kv_lora_rank, m.heads * 2 * m.dhead, "col"), (q, h, "row"))
    return ((h, q + 2 * kv_width(m), "col"), (q, h, "row"))


def moe_layers(m: Transformer) -> int:
    """Layers with experts (all after ``dense_layers``), 0 for a dense model."""
    return m.layers - m.dense_layers if m.experts else 0


def parameters(m: Transformer) -> dict[str, int]:
    """Weights by part: attention, dense MLP, experts, shared experts, router, norms,
    embeddings; ``total`` and ``active`` (the weights one token uses, embeddings included, as
    MoE papers count them)."""
    h = m.hidden
    attn = sum(a * b for a, b, _ in attention_matrices(m))
    mlp = matrices(m) * h * m.ffn
    expert = matrices(m) * h * m.expert_ffn
    moe, dense = moe_layers(m), m.layers - moe_layers(m)
    parts = {"attention": m.layers * attn, "mlp": dense * mlp,
             "experts": moe * m.experts * expert, "shared": moe * m.shared_experts * expert,
             "router": moe * h * m.experts, "norms": m.layers * 2 * h + h,
             "embedding": m.vocab * h * (1 if m.tied else 2)}
    parts["total"] = sum(parts.values())
    parts["active"] = parts["total"] - parts["experts"] + moe * m.top_k * expert
    return parts


def layer_parameters(m: Transformer) -> tuple[float, float, float]:
    """Weights of one average layer: (dense, split over tp; router, replicated; routed experts,
    split over ep x etp)."""
    p = parameters(m)
    dense = (p["attention"] + p["mlp"] + p["shared"] + p["norms"]) / m.layers
    return dense, p["router"] / m.layers, p["experts"] / m.layers


def stage_parameters(m: Transformer, sh, layers: int) -> tuple[float, float, float]:
    """Weights one GPU of a stage of ``layers`` layers holds, embeddings left out: (dense
    layers split over tp, routers (replicated), experts split over ep x etp)."""
    dense, router, experts = layer_parameters(m)
    return dense * layers / sh.tp, router * layers, experts * layers / (sh.ep * sh.etp)


def layer_flops(m: Transformer) -> tuple[float, float, float, float]:
    """Forward model FLOPs per token of one layer: (projections, attention core over the full
    sequence, dense MLP, MoE MLP with its router)."""
    h, s = m.hidden, m.seq
    proj = 2 * sum(a * b for a, b, _ in attention_matrices(m))
    core = 2 * s * m.heads * (qk_dim(m) + m.dhead)
    mlp = 2 * matrices(m) * h * m.ffn
    moe = 2 * matrices(m) * h * m.expert_ffn * (m.top_k + m.shared_experts) + 2 * h * m.experts
    return proj, core, mlp, moe


def model_flops(m: Transformer, tokens: float) -> float:
    """Model FLOPs of one step over ``tokens`` tokens (forward and backward, no recompute), the
    numerator of MFU (Narayanan et al. 2021, eq. 3 without recompute)."""
    proj, core, mlp, moe = layer_flops(m)
    moe_n = moe_layers(m)
    per_token = (m.layers * (proj + core) + (m.layers - moe_n) * mlp + moe_n * moe +
                 2 * m.hidden * m.vocab)
    return 3 * per_token * tokens
