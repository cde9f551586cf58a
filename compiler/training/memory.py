"""Bytes per GPU of a training step, on the most loaded pipeline stage.

- Weights, gradients and optimizer state per parameter (Megatron's distributed-optimizer
  guide): bf16 weights (2), fp32 main gradients (4; fp16 models keep fp16 ones), fp32 master
  weights and two Adam moments (12). Sharding over the data-parallel replicas (dp x cp for the
  dense weights, the expert-data-parallel group for experts): the distributed optimizer and
  ZeRO-1 shard the 12 optimizer bytes, ZeRO-2 also the gradients, ZeRO-3 also the weights;
  PyTorch FSDP (FULL_SHARD with bf16 compute) keeps fp32 parameters, gradients and two moments,
  16 bytes, all sharded. Sharded weights are gathered a layer at a time: ZeRO-3 and FSDP hold
  two layers' unsharded bf16 weights and one layer's gradients on top (the prefetch).
- FP8 (Transformer Engine): each GEMM weight gets an fp8 copy (1 byte, sharded with ZeRO-3),
  and the inputs the projections and MLP save for their weight gradients are kept in fp8.
- ``pure_bf16`` (NeMo AutoModel's recipes cast the model to bf16 and run torch's Adam on it):
  bf16 weights, gradients and both Adam moments, 8 bytes per parameter, no fp32 master copy.
- Unsharded weights in flight with ZeRO-3 and FSDP. PyTorch FSDP2 (``fsdp``) gathers one
  transformer block at a time and prefetches the next: two layers' bf16 weights and one
  layer's fp32 gradients. ``zero = 3`` follows DeepSpeed's stage 3 defaults: at most
  ``stage3_max_live_parameters`` (1e9) gathered, but never less than the largest single weight
  matrix (a module is gathered whole), and gradients reduced in ``reduce_bucket_size`` (5e8)
  element buckets. Under a pipeline FSDP2 does not reshard after forward (torchtitan's
  ``reshard_after_forward`` "default" policy: "for PP, do not reshard after forward to avoid
  per-microbatch all-gathers"): the whole stage's bf16 weights stay gathered and its
  gradients accumulate unsharded (fp32, the reduce dtype) across micro-batches.
- ``recompute_modules`` (Megatron-Core's selective recompute by module, ``modules``): a
  "selective" recompute redoes the attention core unless modules are named; ``layernorm``
  drops the norms' outputs (the QKV and fc1 inputs), ``moe_act`` the experts' activation
  output (fc2's input), ``mla_up_proj`` MLA's Q, K and V (kept as latents), ``mlp`` a dense
  layer's MLP activations (redone from its input); ``core_attn`` drops the scores without
  flash attention (with it, nothing).
- Activations: Korthikanti et al. 2022, Table 2 per layer, generalised to grouped-query and
  latent attention, SwiGLU and experts, times the micro-batches in flight on the first stage
  (``mapping.in_flight``). ``selective`` is Megatron's (the attention core recomputed); with
  ``fsdp`` it is torchtitan's per-op policy (``selective_ac_option = "op"``): a block keeps its
  input, the attention kernel's output and every other matrix multiplication's output, and
  recomputes the rest (``op_policy``).
- The logits buffer on the last stage: the output layer's input plus, per token and vocabulary
  entry over tp, ``LOGIT_BYTES`` of the loss kernel (``Training.cross_entropy``; ``auto``
  picks the framework's: Megatron for Megatron, eager PyTorch with FSDP, bf16 with
  ``pure_bf16``). Megatron's vocabulary-parallel cross entropy makes one fp32 copy of the bf16
  logits and computes the softmax and its gradient in place (2 + 4 bytes; ``megatron``, also
  what Megatron-FSDP runs). PyTorch's eager
  cross entropy (``eager``: ``cross_entropy(logits.float(), labels)``, torchtitan until
  2025-04) peaks in its backward, when ``_log_softmax_backward_data`` takes the saved fp32
  log-softmax and the fp32 gradient ``nll_loss_backward`` made and writes an fp32 result, all
  three live at once (4 + 4 + 4; PyTorch's tools/autograd/derivatives.yaml; the forward's
  bf16 + fp32 + fp32 is 10). ``compiled`` (torch.compile'd, torchtitan with ``--compile``
  from 2025-04-02, bbb1b616e) fuses the upcast, softmax and gradient into kernels that keep
  the bf16 logits and write a bf16 gradient (2 + 2). ``fused`` (flash-attn's
  ``CrossEntropyLoss``, llm-foundry's default ``loss_fn: fused_crossentropy``) keeps the bf16
  logits and writes the gradient into them in place (2). A bf16 loss (``pure_bf16``) keeps
  bf16 logits and log-softmax (2 + 2).
- DeepSeek-V3's savings (technical report, arXiv:2412.19437): ``recompute_norms`` recomputes
  every RMSNorm and the MLA up-projections in backward (sec. 3.2.3), so a layer keeps the norm
  inputs and the latents but neither the GEMM inputs the norms produce nor Q, K, V;
  ``fp8_activations`` caches the attention output (the output projection's input), the MoE
  up-projections' inputs and the SwiGLU inputs in fp8 and recomputes the SwiGLU output
  (sec. 3.3.4); ``bf16_moments`` keeps the AdamW moments in bf16 (sec. 3.3.3, 8 optimizer
  bytes a parameter, not 12); ``dualpipe`` (sec. 3.2.1, Table 2; the DualPipe repository's
  README) puts stages i and P - 1 - i on rank i, two copies of the parameters, with P + 1
  micro-batches of a stage's activations in flight, and the first rank holds the embedding and
  the output head (and, in the paper, the MTP module that shares them: not modelled).
- ``bf16_grads``: the gradient buffer (Megatron-Core's ``main_grad``) in bf16 and reduced in
  bf16, 2 bytes a parameter rather than 4: Megatron-Core's DDP makes its buffer in the
  parameters' dtype when ``grad_reduce_in_fp32`` is off, as every Megatron-Bridge performance
  recipe sets it (v0.2.0 and v0.3.0, ``scripts/performance/configs/*/*_llm_pretrain.py``:
  ``cfg.ddp.grad_reduce_in_fp32 = False``); Apex's distributed Adam with ``grad_sync_dtype:
  bf16`` (NeMo's Nemotron-4 340B config) does the same. FSDP keeps its own (fp32) gradients.
- A runtime reserve for what is not modelled byte by byte (CUDA context, NCCL buffers,
  workspaces, the caching allocator's slack): a documented constant, not a fit.
"""

from __future__ import annotations

import attrs

from ..ir.system import Transformer
from .constants import value
from .epilogue import kept_bytes
from .mapping import Layout, Shape, in_flight
from .params import attention_matrices, kv_width, layer_parameters, moe_layers, q_width

#: The runtime reserve (``constants``: a chosen round figure, with what checks it).
RUNTIME_RESERVE = value("memory.runtime_reserve")
GB = 1e9
#: DeepSpeed ZeRO-3 defaults: parameters gathered at once, gradient elements per reduce bucket.
ZERO3_LIVE_PARAMS = 1e9
ZERO3_REDUCE_BUCKET = 5e8
#: Bytes per token and vocabulary entry (over tp) of the loss at its peak, by kernel: Megatron's
#: vocabulary-parallel cross entropy, PyTorch's eager one (fp32 upcast), torch.compile's,
#: flash-attn's fused one, a bf16 loss (``pure_bf16``). See the module's docstring.
LOGIT_BYTES = {"megatron": 6.0, "eager": 12.0, "compiled": 4.0, "fused": 2.0, "bf16": 4.0}


@attrs.frozen
class Memory:
    """Bytes per GPU on the most loaded pipeline stage."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    reserve: float = RUNTIME_RESERVE
    stage: str = "first"

    @property
    def total(self) -> float:
        """Everything, the runtime reserve included."""
        return self.weights + self.gradients + self.optimizer + self.activations + self.reserve

    @property
    def largest(self) -> tuple[str, float]:
        """The largest term and its bytes (what to shrink first)."""
        terms = {"weights": self.weights, "gradients": self.gradients,
                 "optimizer": self.optimizer, "activations": self.activations}
        name = max(terms, key=lambda k: (terms[k], k))
        return name, terms[name]

    def verdict(self, hbm: float, margin: float = 0.0) -> str:
        """'fits (83 %)', 'fits (94 %), tight: within the memory model's 23 % uncertainty',
        'over by 4.1 GB, tight: within ...; activations are the largest term (52.0 GB)' or
        'over by 40.1 GB; activations are ...' (``fit`` with ``margin``; 0: no band)."""
        kind = fit(self.total, hbm, margin)
        tight = f", tight: within the memory model's {margin:.0%} uncertainty" \
            if kind == TIGHT else ""
        if self.total <= hbm:
            return f"fits ({self.total / hbm:.0%}){tight}"
        name, size = self.largest
        return (f"over by {(self.total - hbm) / GB:.1f} GB{tight}; {name} are the largest "
                f"term ({size / GB:.1f} GB)")


def loss_kernel(t) -> str:
    """The ``LOGIT_BYTES`` key of a training's loss: its ``cross_entropy`` when named, else the
    framework's (a bf16 loss with ``pure_bf16``, PyTorch's eager one with FSDP, Megatron's)."""
    if t.cross_entropy != "auto":
        return t.cross_entropy
    return "bf16" if t.pure_bf16 else "eager" if t.fsdp else "megatron"


def largest_matrix(m: Transformer, sh: Shape) -> float:
    """Parameters of the largest single weight matrix on one GPU (split over tp)."""
    widest = max([a * b for a, b, _ in attention_matrices(m)] +
                 [m.hidden * (m.ffn if m.dense_layers or not m.experts else m.expert_ffn)])
    return widest / sh.tp


def zero_stage(zero: int | None, fsdp: bool, distributed_optimizer: bool) -> int | None:
    """The ZeRO stage these flags fix: 3 with FSDP (full sharding), else the larger of
    ``zero`` and 1 with the distributed optimizer (it is ZeRO-1), else ``zero`` (None: nothing
    fixes it, and ``plan`` searches). One rule for ``plan``'s flags, a parallel block's options
    (``report --scaling``) and the memory model."""
    if fsdp:
        return 3
    if distributed_optimizer:
        return max(zero or 0, 1)
    return zero


def sharding_conflict(zero: int | None, fsdp: bool,
                      distributed_optimizer: bool) -> tuple[str, str] | None:
    """(the option, what it means) when ``zero`` contradicts it, else None: FSDP is ZeRO-3, the
    distributed optimizer at least ZeRO-1. ``zero_stage`` would settle either silently, so
    ``plan``'s flags and a parallel block's settings refuse them with this one rule."""
    if zero is None:
        return None
    if fsdp and zero != 3:
        return "fsdp", "FSDP shards weights, gradients and optimizer state: ZeRO-3"
    if distributed_optimizer and zero == 0:
        return "distributed_optimizer", "the distributed optimizer is ZeRO-1"
    return None


def sharding(t) -> int:
    """The ZeRO stage a training shards with: 3 for FSDP, 1 for the distributed optimizer."""
    return zero_stage(t.zero, t.fsdp, t.distributed_optimizer)


def reduce_bytes(m: Transformer, t) -> int:
    """Bytes a gradient element takes on the wire when data parallelism reduces it: the
    gradients' own dtype where it is 16-bit (fp16 training, ``pure_bf16``'s bf16 gradients,
    ``bf16_grads``' bf16 buffer), fp32 otherwise (Megatron's fp32 ``main_grad``, FSDP's fp32
    reduce dtype). What a rank stores is ``bytes_per_param``'s: FSDP keeps fp32 gradients
    even when it reduces fp16 ones."""
    return 2 if m.dtype == "fp16" or t.pure_bf16 or (t.bf16_grads and not t.fsdp) else 4


def bytes_per_param(m: Transformer, t, shard: int) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per parameter over ``shard`` replicas."""
    level = sharding(t)
    if t.pure_bf16:
        w, g, o = 2.0, 2.0, 4.0
    elif t.fsdp:
        w, g, o = 4.0, 4.0, 8.0
    else:
        w, g = (2.0, 2.0) if m.dtype == "fp16" else (2.0, 4.0)
        o = 12.0 + (2 if m.dtype == "fp16" else 0)
    if t.bf16_moments and not t.pure_bf16:
        o -= 4.0                                # two bf16 moments rather than two fp32 ones
    if t.bf16_grads and not t.fsdp:
        g = 2.0                                 # a bf16 gradient buffer, reduced in bf16
    if level >= 1:
        o /= shard
    if level >= 2:
        g /= shard
    if level >= 3:
        w /= shard
    return w, g, o


def _block_matmuls(m: Transformer, moe: bool) -> list[tuple[float, float]]:
    """(in, out) widths per token of one block's matrix multiplications in the order a
    PyTorch block runs them (torchtitan: wq, wk, wv, wo, then w1, w3, w2; experts per routed
    copy of the token)."""
    h = m.hidden
    if m.kv_lora_rank:
        out = [(a, b) for a, b, _ in attention_matrices(m)]
    else:
        out = [(h, q_width(m)), (h, kv_width(m)), (h, kv_width(m)), (q_width(m), h)]

    def mlp(width: float, copies: float) -> list[tuple[float, float]]:
        ins = [(h, width * copies)] * (2 if m.gated else 1)
        return ins + [(width * copies, h * copies)]
    if not moe:
        return out + mlp(m.ffn, 1)
    out.append((h, m.experts))
    if m.shared_experts:
        out += mlp(m.expert_ffn * m.shared_experts, 1)
    return out + mlp(m.expert_ffn, m.top_k)


def op_policy(m: Transformer, sh: Shape, moe: bool) -> tuple[float, float]:
    """torchtitan's per-op selective checkpointing of one block: (bytes kept per token, the
    share of the block's GEMM FLOPs recomputed). It keeps the block's input, the attention
    kernel's output and the output of every other matrix multiplication (the 1st, 3rd, ...;
    torchtitan's ``_save_list`` policy), and recomputes everything else."""
    mms = _block_matmuls(m, moe)
    kept = sum(b for i, (_, b) in enumerate(mms) if i % 2 == 0)
    flops = [a * b for a, b in mms]
    redo = sum(f for i, f in enumerate(flops) if i % 2 == 1) / sum(flops)
    return 2 * (m.hidden + q_width(m) + kept) / sh.tp, redo


def modules(t) -> tuple[str, ...]:
    """The modules a training's recompute redoes in a layer's backward, as Megatron-Core's
    ``recompute_modules``: the attention core for a "selective" recompute that names none
    (Megatron's default, Korthikanti et al. 2022), the named ones otherwise; with
    ``recompute_norms`` (DeepSeek-V3's report, sec. 3.2.3) also the norms and MLA's
    up-projections whatever the mode; nothing for "none" otherwise (and "full" redoes the
    whole layer). Memory drops what they name and compute charges their re-forward."""
    if t.recompute == "full":
        return ()
    named = (tuple(t.recompute_modules) or ("core_attn",)) \
        if t.recompute == "selective" and not t.fsdp else ()
    extra = ("layernorm", "mla_up_proj") if t.recompute_norms else ()
    return named + tuple(x for x in extra if x not in named)


def activation_per_layer(m: Transformer, t, sh: Shape, moe: bool | None = None) -> float:
    """Bytes one layer keeps for its backward pass, per token of a micro-batch, on one GPU
    (Korthikanti et al. 2022, Table 2, with GQA or MLA keys and values, SwiGLU, experts and
    fp8 GEMM inputs). ``moe`` None averages dense and MoE layers."""
    if moe is None:
        share = moe_layers(m) / m.layers
        return (1 - share) * activation_per_layer(m, t, sh, False) + \
            (share * activation_per_layer(m, t, sh, True) if share else 0.0)
    h, q, kv = m.hidden, q_width(m), kv_width(m)
    sp = t.sequence_parallel and sh.tp > 1
    if t.recompute == "full":
        return 2 * h / (sh.tp if sp else 1)
    if t.recompute == "selective" and t.fsdp:
        return op_policy(m, sh, moe)[0]
    f8 = t.fp8_activations
    g8 = 0.5 if t.fp8 or f8 else 1.0          # fp8 copies of the GEMM inputs
    redo = modules(t)
    norms = "layernorm" in redo          # the norms' outputs (the GEMM inputs) recomputed
    up = "mla_up_proj" in redo           # MLA's Q, K, V recomputed from their latents
    # norm inputs 4h, dropout masks 2h (one byte each), the qkv and fc1 inputs 2h each
    stream = 4 * h + (0 if norms else 4 * h * g8) + (2 * h if m.dropout else 0)
    attn = 2 * q * g8 + (0 if up and m.kv_lora_rank else 2 * q + 4 * kv)  # out-proj input, Q K V
    if m.kv_lora_rank:
        attn += 2 * (m.q_lora_rank + m.kv_lora_rank + m.rope_head_dim)  # the latents
    if not t.flash_attention and "core_attn" not in redo:
        attn += (5 if m.dropout else 2) * m.heads * m.seq     # softmax (and dropout) of scores

    def mlp(width: float, act: bool = False) -> float:   # the activation's input(s), fc2's input
        if f8:                                 # fp8 inputs, the output recomputed
            return width * (2 if m.gated else 1)
        # ``act``: the activation recomputed, so fc2's input is not kept
        return 2 * width * (2 if m.gated else 1) + (0 if act else 2 * width * g8)
    if not moe:
        dense = 0.0 if "mlp" in redo else mlp(m.ffn)     # the MLP redone from its input
        return stream / (sh.tp if sp else 1) + (attn + dense) / sh.tp
    load = t.imbalance if not m.capacity_factor else min(t.imbalance, m.capacity_factor)
    shared = m.shared_experts * mlp(m.expert_ffn)
    routed = m.top_k * load * (mlp(m.expert_ffn, "moe_act" in redo) +
                               2 * h * g8 +                      # the permuted input
                               (0 if f8 else kept_bytes(m, t)))  # an eager clamp's input
    return stream / (sh.tp if sp else 1) + (attn + shared + routed) / sh.tp


def memory(m: Transformer, t, sh: Shape, lay: Layout, microbatches: int) -> Memory:
    """Per-GPU memory of the heavier of the first and last pipeline stages."""
    dense_l, router_l, experts_l = layer_parameters(m)
    level = sharding(t)
    embed = m.vocab * m.hidden / sh.tp
    tokens = m.seq * t.microbatch / sh.cp
    per_layer = activation_per_layer(m, t, sh) * tokens
    held = in_flight(sh.pp, microbatches, t.interleave)
    drop_embed = tokens * m.hidden * sh.pp / sh.tp if m.dropout else 0.0
    # The final norm and the output layer keep their inputs (4 s b h / t, Korthikanti et al.
    # 2022 sec. 4.3), and the loss its logits buffer (``LOGIT_BYTES``).
    loss = loss_kernel(t)
    logits = 4 * tokens * m.hidden / sh.tp + LOGIT_BYTES[loss] * tokens * m.vocab / sh.tp
    first_embed = embed
    last_embed = embed if (sh.pp > 1 or not m.tied) else 0.0
    stages = {"first": (lay.first, first_embed, lay.first * per_layer * held + drop_embed),
              "last": (lay.last, last_embed, lay.last * per_layer + logits)}
    if t.dualpipe and sh.pp > 1:
        # rank 0 holds the first and the last stage, P + 1 stage activations in flight
        both = (lay.first + lay.last) / 2
        held = min(sh.pp + 1, microbatches)
        stages = {"first+last": (lay.first + lay.last, first_embed + last_embed,
                                 both * per_layer * held + drop_embed + logits)}
        if sh.pp > 2:
            stages["middle"] = (2 * lay.middle, 0.0, lay.middle * per_layer * held)
    elif sh.pp == 1:
        # CPU offloading (``offload_layers``, pp 1 only) keeps that many layers' activations in
        # host memory; one layer's are in flight to or from it (Megatron-Core's double buffer)
        kept = lay.first - t.offload_layers + 1 if t.offload_layers else lay.first
        stages = {"only": (lay.first, embed * (1 if m.tied else 2),
                           kept * per_layer + drop_embed + logits)}
    elif sh.pp > 2 and lay.middle > lay.first:
        stages["middle"] = (lay.middle, 0.0, lay.middle * per_layer *
                            in_flight(sh.pp - 1, microbatches, t.interleave))
    w_d, g_d, o_d = bytes_per_param(m, t, sh.dpcp)
    w_e, g_e, o_e = bytes_per_param(m, t, sh.edp)
    best = None
    for name, (layers, emb, act) in stages.items():
        dense = dense_l * layers / sh.tp + router_l * layers + emb
        experts = experts_l * layers / (sh.ep * sh.etp)
        weights = dense * w_d + experts * w_e
        gradients = dense * g_d + experts * g_e
        if level >= 3 and layers:
            one = (dense - emb) / layers + experts / layers
            if t.fsdp and sh.pp > 1:
                # FSDP2 under a pipeline (torchtitan's and AutoModel's default
                # reshard_after_forward policy): no reshard after forward, so the stage's
                # bf16 weights stay gathered, and its gradients accumulate unsharded in the
                # fp32 reduce dtype until the last micro-batch
                weights += 2 * dense + 2 * experts
                gradients += 4 * dense + 4 * experts
            elif t.fsdp:    # two blocks' bf16 weights (running, prefetched), one's gradients
                weights += 2 * 2 * one
                gradients += 4 * one
            else:           # DeepSpeed: a live-parameter budget, a gradient bucket
                weights += 2 * max(largest_matrix(m, sh), min(2 * one, ZERO3_LIVE_PARAMS))
                gradients += bytes_per_param(m, t, 1)[1] * \
                    min(one, ZERO3_REDUCE_BUCKET)
        if t.fp8:
            weights += dense / (sh.dpcp if level >= 3 else 1) + \
                experts / (sh.edp if level >= 3 else 1)
        mem = Memory(weights, gradients, dense * o_d + experts * o_e, act, stage=name)
        if best is None or mem.total > best.total:
            best = mem
    return best


def margin_from(ratios) -> float:
    """The headroom that covers the upper spread of measured / predicted peak memory: 1 - 1 / the
    90th percentile of the ratios (0 when topoc overstates nine runs in ten). A candidate
    predicted above (1 - margin) x HBM is "tight": one run in ten at that ratio would not fit.
    benchmarks/memory_validation.py prints the ratios and this figure; ``MEMORY_MARGIN`` is it,
    rounded up to a whole percent."""
    v = sorted(ratios)
    pos = 0.9 * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    q = v[lo] + (v[hi] - v[lo]) * (pos - lo)
    return max(0.0, 1 - 1 / q)


#: The memory model's measured uncertainty, the one figure both sides of ``fit`` read:
#: ``margin_from`` over the memory validation's rows (benchmarks/memory_validation.py,
#: docs/plan.md "Memory"): measured / predicted reaches 1.30 at the 90th percentile, 1 - 1 / 1.30
#: = 0.228, rounded up. Nothing in the memory model is fitted, so every row is out of sample;
#: the margin itself, left one source out (the script's "leave one source out"), is 0.17-0.24.
MEMORY_MARGIN = value("memory.margin")

#: What ``fit`` calls a prediction against HBM.
FITS, TIGHT, OVER = "fits", "tight", "over"


def band(hbm: float, margin: float = MEMORY_MARGIN) -> tuple[float, float]:
    """(low, high) bytes: a prediction above ``low`` = (1 - margin) x HBM is inside the memory
    model's uncertainty of HBM; one above ``high`` = HBM / (1 - margin) is over HBM by more
    than it. The band is the same ratio either way: measured / predicted reached 1.30 at the
    90th percentile (so a prediction above 77 % of HBM may not fit), and a prediction over HBM
    is refused only when it would not fit even if the model overstated it by that ratio. The
    validation's lowest ratio is 0.85 (no row below 1 / 1.30 = 0.77), and the memory of
    Megatron runs is not validated at all: three held-out runs that ran were predicted
    1.03-1.10x their HBM (docs/plan.md "Memory"), so the torchtitan rows' lower tail alone
    would refuse runs that happen. ``margin`` 0 gives (HBM, HBM): no band."""
    return (1 - margin) * hbm, hbm / (1 - margin)


def fit(total: float, hbm: float | None, margin: float = MEMORY_MARGIN) -> str:
    """``FITS`` (at most (1 - margin) x HBM), ``TIGHT`` (inside the band either side of HBM:
    answered, marked) or ``OVER`` (over HBM by more than the uncertainty: refused); ``FITS``
    with an unknown HBM."""
    if not hbm:
        return FITS
    low, high = band(hbm, margin)
    return FITS if total <= low else TIGHT if total <= high else OVER
