"""A model's training step derived from its shape: traffic, FLOPs, compute time and memory.

The accounting follows Megatron-LM as its papers describe it:

- FLOPs: only the matrix multiplications, as in Narayanan et al. 2021 (eq. 3) and Korthikanti et
  al. 2022 (appendix A): per token and layer 2 x (the layer's weights) for the projections and
  MLP, 4 x seq x hidden for the attention scores and values, 2 x hidden x vocab for the logits;
  backward is twice forward. Full recompute adds one forward of the layers, selective recompute
  the attention core.
- Compute time: matrix multiplications at ``gemm_efficiency`` of the GPU's dense peak, plus the
  element-wise work (norms, residuals, dropout, activation, softmax) at ``hbm_efficiency`` of its
  memory bandwidth. Both fractions are settings; their defaults are fitted on published Megatron
  runs (docs/plan.md).
- Memory: Megatron's bytes per parameter (18, or 6 + 12/d with the distributed optimizer, from
  its distributed-optimizer guide) and the activation memory of Korthikanti et al. 2022 (eqs. 1-6,
  Table 2), generalised to grouped-query attention, SwiGLU and experts, on the most loaded
  pipeline stage.
- Traffic: tensor parallelism moves 4 all-reduces per layer and micro-batch (2 forward, 2
  backward), or 4 all-gathers and 4 reduce-scatters with sequence parallelism; pipeline stages
  send one activation forward and one gradient back per micro-batch and model chunk; data
  parallelism reduces the fp32 gradients by bucket (reduce-scatter, then an all-gather of the bf16
  weights, with the distributed optimizer); experts move 4 all-to-alls per layer and
  micro-batch; context parallelism gathers keys and values.
"""

from __future__ import annotations

import math

import attrs

from ..ir.gpus import GEMM_EFFICIENCY
from ..ir.system import Transformer, TrafficFlow

RECOMPUTE = ("none", "selective", "full")
#: The fraction of dense peak the matrix multiplications reach on a GPU model that declares no
#: ``gemm_efficiency``: H100's fitted figure (the newest generation with published runs; A100
#: reaches 0.76). The element-wise kernels reach HBM_EFFICIENCY of the memory bandwidth, a
#: round figure, not a fit. benchmarks/plan_calibration.py fits both GPU figures and docs/plan.md
#: reports every row's error.
HBM_EFFICIENCY = 0.5
#: Megatron's default gradient bucket: 40 M parameters of fp32 gradients.
BUCKET = 40_000_000 * 4
#: Memory topoc does not model byte by byte: the CUDA context, NCCL's buffers, library
#: workspaces and the caching allocator's slack. A documented constant, not a fit.
RUNTIME_RESERVE = 2 * 2**30


@attrs.frozen
class Training:
    """How a model is trained: the batch and Megatron's memory and overlap options."""

    model: Transformer
    batch: int                          # global batch, in sequences
    microbatch: int = 1
    recompute: str = "none"
    sequence_parallel: bool = False
    interleave: int = 1                 # model chunks per pipeline stage (virtual stages)
    distributed_optimizer: bool = False
    overlap: bool = False               # grad reduce / param gather overlap (Megatron flags)
    flash_attention: bool = True
    bucket: int = BUCKET                # bytes of fp32 gradients per data-parallel bucket
    imbalance: float = 1.0              # expert load: the busiest expert's share over the mean
    gemm_efficiency: float | None = None  # None: the GPU model's, else GEMM_EFFICIENCY
    hbm_efficiency: float = HBM_EFFICIENCY


@attrs.frozen
class Shape:
    """The sizes of one mapping: tp, cp, ep, dp, pp and the expert tensor-parallel size."""

    tp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 1
    pp: int = 1
    etp: int = 1

    @property
    def world(self) -> int:
        """GPUs used: tp x cp x dp x pp (expert groups reuse these ranks)."""
        return self.tp * self.cp * self.dp * self.pp

    @property
    def edp(self) -> int:
        """Megatron's expert data-parallel size."""
        return self.tp * self.cp * self.dp // (self.etp * self.ep)


def shape_of(strategy) -> Shape:
    """The Shape of a ``ParallelStrategy``."""
    return Shape(**{d: strategy.size(d) for d in ("tp", "cp", "ep", "dp", "pp")},
                 etp=strategy.expert_tp)


class PlanError(ValueError):
    """A mapping the model cannot run with (layers, batch or heads do not divide)."""


def check(t: Training, sh: Shape) -> int:
    """The micro-batches per step of each pipeline; PlanError when the mapping cannot run."""
    m = t.model
    if t.recompute not in RECOMPUTE:
        raise PlanError(f"recompute '{t.recompute}': one of {', '.join(RECOMPUTE)}")
    if t.batch % (t.microbatch * sh.dp):
        raise PlanError(f"batch {t.batch} does not divide into micro-batches of {t.microbatch} "
                        f"over dp = {sh.dp}")
    micro = t.batch // (t.microbatch * sh.dp)
    if sh.pp > m.layers or t.interleave > 1 and m.layers % (sh.pp * t.interleave):
        raise PlanError(f"{m.layers} layers do not split into pp = {sh.pp} stages"
                        + (f" of {t.interleave} chunks" if t.interleave > 1 else ""))
    if t.interleave > 1 and (sh.pp < 2 or micro % sh.pp):
        raise PlanError(f"an interleaved schedule needs pp >= 2 and micro-batches ({micro}) "
                        f"divisible by pp = {sh.pp}")
    if m.heads % sh.tp or m.kv_heads % sh.tp and sh.tp % m.kv_heads:
        raise PlanError(f"{m.heads} heads ({m.kv_heads} key/value heads) do not split over "
                        f"tp = {sh.tp}")
    if m.seq % (2 * sh.cp) and sh.cp > 1:
        raise PlanError(f"sequence {m.seq} does not split into 2 x cp = {2 * sh.cp} chunks")
    if sh.ep > 1 and (not m.experts or m.experts % sh.ep):
        raise PlanError(f"ep = {sh.ep} needs a mixture of experts whose expert count it divides"
                        if m.experts else f"ep = {sh.ep} on '{m.name}', which has no experts")
    if (sh.tp * sh.cp * sh.dp) % (sh.etp * sh.ep):
        raise PlanError(f"ep = {sh.ep} x etp = {sh.etp} does not divide tp x cp x dp")
    return micro


# ---- shapes -----------------------------------------------------------------------------------

def stage_layers(m: Transformer, sh: Shape) -> int:
    """Layers on the heaviest pipeline stage. Stages may be uneven (Megatron's
    ``--decoder-first/last-pipeline-num-layers``): 80 layers on 9 stages run 9 per stage, the
    heaviest setting the pace."""
    return -(-m.layers // sh.pp)


def _kv(m: Transformer) -> int:
    return m.kv_heads * (m.hidden // m.heads)


def _matrices(m: Transformer) -> int:
    return 3 if m.gated else 2


def moe_layers(m: Transformer) -> int:
    """Layers with experts (all after ``dense_layers``), 0 for a dense model."""
    return m.layers - m.dense_layers if m.experts else 0


def parameters(m: Transformer) -> dict[str, int]:
    """Weights by part: attention, dense MLP, experts, shared experts, router, norms,
    embeddings; ``total`` and ``active`` (the weights one token uses, embeddings included, as
    MoE papers count them)."""
    h = m.hidden
    attn = h * (h + 2 * _kv(m)) + h * h
    mlp = _matrices(m) * h * m.ffn
    expert = _matrices(m) * h * m.expert_ffn
    moe, dense = moe_layers(m), m.layers - moe_layers(m)
    parts = {"attention": m.layers * attn, "mlp": dense * mlp,
             "experts": moe * m.experts * expert, "shared": moe * m.shared_experts * expert,
             "router": moe * h * m.experts, "norms": m.layers * 2 * h + h,
             "embedding": m.vocab * h * (1 if m.tied else 2)}
    parts["total"] = sum(parts.values())
    parts["active"] = parts["total"] - parts["experts"] + moe * m.top_k * expert
    return parts


def stage_parameters(m: Transformer, sh: Shape) -> tuple[float, float, float]:
    """Weights one GPU of the heaviest stage holds, embeddings left out: (dense layers split
    over tp, routers (replicated), experts split over ep x etp)."""
    p = parameters(m)
    layers = stage_layers(m, sh)
    dense = (p["attention"] + p["mlp"] + p["shared"] + p["norms"]) / m.layers * layers / sh.tp
    return dense, p["router"] / m.layers * layers, \
        p["experts"] / m.layers * layers / (sh.ep * sh.etp)


def _layer_flops(m: Transformer) -> tuple[float, float, float, float]:
    """Forward FLOPs per token of one layer: (projections, attention core, dense MLP, MoE MLP)."""
    h, s = m.hidden, m.seq
    proj = 2 * h * (h + 2 * _kv(m)) + 2 * h * h
    core = 4 * s * h
    mlp = 2 * _matrices(m) * h * m.ffn
    moe = 2 * _matrices(m) * h * m.expert_ffn * (m.top_k + m.shared_experts) + 2 * h * m.experts
    return proj, core, mlp, moe


def model_flops(m: Transformer, tokens: float) -> float:
    """Model FLOPs of one step over ``tokens`` tokens (forward and backward, no recompute), the
    numerator of MFU."""
    proj, core, mlp, moe = _layer_flops(m)
    moe_n = moe_layers(m)
    per_token = (m.layers * (proj + core) + (m.layers - moe_n) * mlp + moe_n * moe +
                 2 * m.hidden * m.vocab)
    return 3 * per_token * tokens


# ---- compute ----------------------------------------------------------------------------------

def _elementwise(m: Transformer, t: Training, sh: Shape, mlp_width: float) -> tuple[float, float]:
    """Bytes of element-wise memory traffic per token of one layer's forward pass on one GPU:
    (everything, the softmax path alone). Norms, residual adds and dropouts run on the hidden
    stream (split over tp only with sequence parallelism), the activation function on the MLP,
    the softmax path (without flash attention) on heads x seq scores."""
    h = m.hidden
    stream = 2 * (10 * h + (5 * h if m.dropout else 0))
    stream /= sh.tp if t.sequence_parallel and sh.tp > 1 else 1
    act = 2 * _matrices(m) * mlp_width / sh.tp
    core = 2 * m.heads * m.seq * (2 + (2.5 if m.dropout else 0)) / sh.tp
    return stream + act + (0 if t.flash_attention else core), core


@attrs.frozen
class Compute:
    """One GPU's compute per step on the pipeline's slowest (last) stage."""

    time: float
    hardware_flops: float      # per GPU, recompute included
    gemm_time: float
    memory_time: float
    efficiency: float          # the GEMM efficiency used


def compute(m: Transformer, t: Training, sh: Shape, peak: float, hbm_bandwidth: float,
            gemm_efficiency: float = GEMM_EFFICIENCY) -> Compute:
    """Seconds of compute per step on one GPU of the last pipeline stage (it also runs the
    logits), from FLOPs over ``peak`` and element-wise bytes over ``hbm_bandwidth``. The
    training's own ``gemm_efficiency`` wins over the GPU's ``gemm_efficiency``."""
    tokens = t.batch * m.seq / (sh.dp * sh.cp)          # this GPU's tokens per step
    layers = stage_layers(m, sh)
    moe_share = moe_layers(m) / m.layers
    proj, core, mlp, moe = _layer_flops(m)
    moe_flops = moe * t.imbalance
    mlp_mix = (1 - moe_share) * mlp + moe_share * moe_flops
    fwd = (proj + core + mlp_mix) / sh.tp
    extra = {"none": 0.0, "selective": core / sh.tp, "full": fwd}[t.recompute]
    gemm = tokens * (layers * (3 * fwd + extra) + 3 * 2 * m.hidden * m.vocab / sh.tp)
    width = (1 - moe_share) * m.ffn + moe_share * m.expert_ffn * (m.top_k + m.shared_experts) \
        * t.imbalance
    ew, softmax = _elementwise(m, t, sh, width)
    ew_extra = {"none": 0.0, "full": ew,
                "selective": 0.0 if t.flash_attention else softmax}[t.recompute]
    mem = tokens * layers * (3 * ew + ew_extra)
    eff = t.gemm_efficiency or gemm_efficiency
    gemm_time = gemm / (peak * eff)
    mem_time = mem / (hbm_bandwidth * t.hbm_efficiency)
    return Compute(gemm_time + mem_time, gemm, gemm_time, mem_time, eff)


# ---- memory -----------------------------------------------------------------------------------

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


def _bytes_per_param(m: Transformer, t: Training, shard: int) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per parameter, Megatron's table: bf16 weights and
    fp32 main gradients, fp32 master weights and two Adam moments (12 bytes, sharded over the
    data-parallel group with the distributed optimizer)."""
    weights, grads = (2, 2) if m.dtype == "fp16" else (2, 4)
    optimizer = 12 + (2 if m.dtype == "fp16" else 0)
    if t.distributed_optimizer:
        optimizer /= shard
    return weights, grads, optimizer


def _activation_per_layer(m: Transformer, t: Training, sh: Shape) -> float:
    """Bytes one layer keeps for its backward pass, per token of a micro-batch, on one GPU
    (Korthikanti et al. 2022, Table 2, with GQA keys and values, SwiGLU and routed experts)."""
    h, kv = m.hidden, _kv(m)
    sp = t.sequence_parallel and sh.tp > 1
    if t.recompute == "full":
        return 2 * h / (sh.tp if sp else 1)
    # norm inputs 4h, dropout masks 2h (one byte each), the qkv and fc1 inputs 2h each
    stream = 8 * h + (2 * h if m.dropout else 0)
    attn = 4 * h + 4 * kv                      # Q, K, V and the output projection's input
    if t.recompute == "none" and not t.flash_attention:
        attn += (5 if m.dropout else 2) * m.heads * m.seq     # softmax (and dropout) of scores

    def mlp(width: float) -> float:            # the activation's input(s) and fc2's input
        return 2 * width * (2 if m.gated else 1) + 2 * width
    share = moe_layers(m) / m.layers
    dense = (1 - share) * mlp(m.ffn) + share * m.shared_experts * mlp(m.expert_ffn)
    routed = share * m.top_k * t.imbalance * (mlp(m.expert_ffn) + 2 * h) if m.experts else 0.0
    return stream / (sh.tp if sp else 1) + (attn + dense + routed) / sh.tp


def memory(m: Transformer, t: Training, sh: Shape, microbatches: int) -> Memory:
    """Per-GPU memory of the heavier of the first and last pipeline stages."""
    layers = stage_layers(m, sh)
    dense, router, experts = stage_parameters(m, sh)
    dense += router
    embed = m.vocab * m.hidden / sh.tp
    tokens = m.seq * t.microbatch / sh.cp
    per_layer = _activation_per_layer(m, t, sh) * tokens
    in_flight = min(sh.pp, microbatches)
    if t.interleave > 1:
        in_flight *= 1 + (sh.pp - 1) / (sh.pp * t.interleave)
    drop_embed = tokens * m.hidden * sh.pp / sh.tp if m.dropout else 0.0
    # The final norm and the output layer keep their inputs (4 s b h / t, Korthikanti et al.
    # 2022 sec. 4.3); Megatron's vocab-parallel cross-entropy keeps the fp32 softmax for its
    # backward and writes an fp32 gradient of the same size (8 s b v / t).
    logits = 4 * tokens * m.hidden / sh.tp + 8 * tokens * m.vocab / sh.tp
    stages = {"first": (dense + embed, experts, layers * per_layer * in_flight + drop_embed),
              "last": (dense + (embed if (sh.pp > 1 or not m.tied) else 0), experts,
                       layers * per_layer + logits)}
    if sh.pp == 1:
        stages = {"only": (dense + embed * (1 if m.tied else 2), experts,
                           layers * per_layer + drop_embed + logits)}
    w_d, g_d, o_d = _bytes_per_param(m, t, sh.dp * sh.cp)
    w_e, g_e, o_e = _bytes_per_param(m, t, sh.edp)
    best = None
    for name, (dense_p, expert_p, act) in stages.items():
        mem = Memory(dense_p * w_d + expert_p * w_e, dense_p * g_d + expert_p * g_e,
                     dense_p * o_d + expert_p * o_e, act, stage=name)
        if best is None or mem.total > best.total:
            best = mem
    return best


# ---- traffic ----------------------------------------------------------------------------------

def traffic(m: Transformer, t: Training, sh: Shape, microbatches: int) -> tuple[TrafficFlow, ...]:
    """The collectives one GPU takes part in per step, by group kind, with their overlap class
    (``backward``: the gradient reduction behind the backward pass; ``wgrad``: the backward
    tensor-parallel collectives behind the weight-gradient GEMMs; ``forward``: the parameter
    all-gather behind the next forward; ``none``: on the critical path)."""
    flows: list[TrafficFlow] = []
    h, seq = m.hidden, m.seq
    layers = stage_layers(m, sh)
    tokens = seq * t.microbatch / sh.cp
    act = int(tokens * h * 2)                              # one bf16 hidden stream
    calls = layers * microbatches
    extra = 1 if t.recompute == "full" else 0              # the recompute forward repeats them
    if sh.tp > 1:
        if t.sequence_parallel:
            for coll in ("allgather", "reducescatter"):
                flows.append(TrafficFlow("tp", coll, act, calls * 2 * (1 + extra), overlap="none"))
                flows.append(TrafficFlow("tp", coll, act, calls * 2, overlap="wgrad"))
        else:
            flows.append(TrafficFlow("tp", "allreduce", act, calls * 2 * (1 + extra),
                                     overlap="none"))
            flows.append(TrafficFlow("tp", "allreduce", act, calls * 2, overlap="wgrad"))
    if sh.cp > 1:
        kv = int(seq * t.microbatch * _kv(m) * 2 * 2 / max(1, min(sh.tp, m.kv_heads)))
        flows.append(TrafficFlow("cp", "allgather", kv, calls * (2 + extra), overlap="backward"))
        flows.append(TrafficFlow("cp", "reducescatter", kv, calls, overlap="backward"))
    if sh.ep > 1:
        moe = -(-moe_layers(m) // sh.pp)
        routed = int(tokens / (sh.tp if t.sequence_parallel else 1) * m.top_k * h * 2
                     * t.imbalance)
        flows.append(TrafficFlow("ep", "alltoall", routed, moe * microbatches * (4 + 2 * extra),
                                 overlap="none"))
    if sh.pp > 1:
        boundary = int(act / (sh.tp if t.sequence_parallel else 1))
        flows.append(TrafficFlow("pp", "sendrecv", boundary, 2 * microbatches * t.interleave,
                                 overlap="none"))
    flows += _gradient_flows(m, t, sh)
    return tuple(f for f in flows if f.count > 0 and f.bytes > 0)


def _gradient_flows(m: Transformer, t: Training, sh: Shape) -> list[TrafficFlow]:
    dense, _, experts = stage_parameters(m, sh)
    dense += m.vocab * m.hidden / sh.tp             # one embedding (input or output) per stage
    out = []
    for kind, params, size in (("dp", dense, sh.dp * sh.cp), ("edp", experts, sh.edp)):
        if size < 2 or params < 1:
            continue
        grads = params * (2 if m.dtype == "fp16" else 4)
        buckets = max(1, math.ceil(grads / t.bucket))
        each = int(grads / buckets)
        reduce_overlap = "backward" if t.overlap else "none"
        if t.distributed_optimizer:
            out.append(TrafficFlow(kind, "reducescatter", each, buckets, overlap=reduce_overlap))
            out.append(TrafficFlow(kind, "allgather", int(each / 2), buckets,
                                   overlap="forward" if t.overlap else "none"))
        else:
            out.append(TrafficFlow(kind, "allreduce", each, buckets, overlap=reduce_overlap))
    return out
