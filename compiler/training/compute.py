"""One GPU's compute time per training step, GEMM by GEMM.

Every matrix multiplication of a layer is listed with its per-GPU shape (tokens of one
micro-batch on this rank, the weight's in and out widths after tensor parallelism; experts by
the tokens each local expert receives) and timed with ``gemm.gemm_time`` on the GPU's peak at
the efficiency of that shape. Backward runs two GEMMs of each forward shape (data and weight
gradients). FP8 runs the layers' projections and MLPs at the fp8 peak; the attention kernels,
the router and the output layer stay bf16, as Transformer Engine's recipes keep them.

Attention: with flash attention the kernel does the causal half of the score and value FLOPs,
at ``Curve.attention`` of the bf16 peak scaled by the shape of the chunks it works on (with
context parallelism a rank's queries attend in 2 x cp chunks of seq / (2 cp) tokens); its
backward costs 2.5 forwards (five matrix products instead of two). Without flash attention the
scores are batched GEMMs over the full square and the softmax path moves its bytes through HBM.

Element-wise work (norms, residuals, dropout, the activation function) moves its bytes at
``hbm_efficiency`` of the HBM bandwidth. With fp8 GEMMs every GEMM input is cast first
(Transformer Engine, torchao): ``FP8_CAST_BYTES`` per input element (a bf16 read, an fp8 write
and the transposed copy the weight gradient reads), a documented figure, not a fit.

MoE layers: after the dropless dispatcher's host synchronisation the forward's expert segment
runs no faster than the host issues its kernels, and the backward no faster than the host
issues the layer's (``host_bound``): fine-grained experts at small micro-batches wait on the
host, large ones do not. A GPT-OSS-style expert's clamp and biases add the element-wise passes
and launches its framework runs outside the fused kernels (``epilogue``).
"""

from __future__ import annotations

import attrs

from ..ir.gpus import GPUFigures
from ..ir.system import Transformer
from .constants import value
from . import ep_overlap, epilogue
from .fp8 import RECIPES, extra_bytes, slowdown
from .gemm import CURVES, Curve, gemm_time, generation, shape_factor
from .mapping import Layout, Shape
from .memory import activation_per_layer, modules, op_policy
from .params import attention_matrices, matrices, qk_dim, stage_parameters
from . import zero3

#: How each micro-batch's weight gradients reach the gradient buffer, and the HBM bytes per
#: local weight that costs per micro-batch (``Training.grad_accumulation``), with how many
#: micro-batches of a step skip it:
#: - "fused": the weight-gradient GEMM accumulates into the buffer itself (Megatron-Core's
#:   ``gradient_accumulation_fusion``, on in Megatron-LM's and NeMo's defaults; FSDP reduces
#:   each micro-batch's gradients instead): no pass of its own, 0 bytes.
#: - "autograd": PyTorch's AccumulateGrad adds each micro-batch's gradient into ``param.grad``
#:   in the weights' 16-bit type (the layers call plain ``F.linear``, as
#:   bigscience-workshop/Megatron-DeepSpeed's ``megatron/mpu/layers.py`` of 2022 does): it
#:   reads both and writes one, 3 x 2 bytes, on every micro-batch after the first (the first's
#:   gradient is taken as it is, not added).
#: - "fp32_copy": DeepSpeed's ``BF16_Optimizer.backward`` then ``update_hp_grads`` on every
#:   micro-batch: ``hp_grad.add_(lp.grad.to(fp32))`` reads the bf16 gradient (2) and writes its
#:   fp32 copy (4), reads the copy and the fp32 accumulator (4 + 4) and writes the sum (4):
#:   18 bytes.
#: The pass runs at ``hbm_efficiency`` of HBM bandwidth, as the other element-wise work.
GRAD_ACCUMULATION = {"fused": (0.0, 0), "autograd": (6.0, 1), "fp32_copy": (18.0, 0)}
#: Flash attention's backward over its forward (five matrix products against two).
ATTENTION_BACKWARD = 2.5


@attrs.frozen
class Compute:
    """One GPU's compute per step on the pipeline's slowest stage."""

    time: float                 # seconds per step
    hardware_flops: float       # FLOPs per step, recompute included
    gemm_time: float            # of ``time``: the matrix multiplications
    memory_time: float          # of ``time``: element-wise work
    efficiency: float           # GEMM FLOPs over (GEMM time x the bf16 or fp8 peak used)
    attention_time: float = 0.0  # of ``time``: attention kernels (ring attention hides here)
    microbatch_time: float = 0.0  # one micro-batch (all model chunks) on the slowest stage
    stage: str = "last"
    # EP A2A overlap (``ep_overlap``): one MoE layer's attention and MLP forward and backward
    # seconds on one micro-batch, and the share of SMs the hidden all-to-alls take from them
    ep_segments: tuple[float, ...] = ()
    ep_sm_share: float = 0.0
    accumulation_time: float = 0.0  # of ``memory_time``: the gradient-accumulation passes
    launch_time: float = 0.0    # of ``time``: the GPU idle between synchronous launches
    offload_time: float = 0.0   # of ``time``: CPU offloading's transfers left exposed
    layer_time: float = 0.0     # of ``time``: the fixed cost per layer and micro-batch
    zero3_host_time: float = 0.0  # of ``time``: ZeRO-3's per-rank copies issued (``zero3``)


@attrs.frozen
class _Rates:
    peak: float         # bf16 FLOP/s
    fp8: float          # fp8 FLOP/s for the layers' GEMMs (bf16 peak when no fp8)
    hbm: float
    curve: Curve
    e_max: float
    e_fp8: float


def rates(gpu: GPUFigures, t) -> _Rates:
    """The GPU's peaks and efficiency plateau for training ``t``."""
    curve = CURVES[generation(gpu.name)]
    e_max = t.gemm_efficiency or gpu.gemm_efficiency or curve.e_max
    use_fp8 = t.fp8 and gpu.fp8 > 0 and curve.fp8 > 0
    scale = e_max / curve.e_max
    return _Rates(gpu.bf16, gpu.fp8 if use_fp8 else gpu.bf16, gpu.hbm_bandwidth, curve, e_max,
                  min(1.0, curve.fp8 * scale) if use_fp8 else e_max)


def _gemms(r: _Rates, shapes, fp8: bool) -> tuple[float, float]:
    """(seconds, FLOPs) of (M, N, K, count) GEMMs, forward only."""
    peak, eff, size = (r.fp8, r.e_fp8, 1.0) if fp8 else (r.peak, r.e_max, 2.0)
    time = flops = 0.0
    for m, n, k, count in shapes:
        time += count * gemm_time(m, n, k, peak, r.hbm, eff, r.curve.c, size)
        flops += count * 2.0 * m * n * k
    return time, flops


def _layer_gemms(m: Transformer, t, sh: Shape, tokens: float, moe: bool):
    """(M, N, K, count) of one layer's forward projections and MLP on one GPU."""
    out = []
    for a, b, split in attention_matrices(m):
        n = b / sh.tp if split == "col" else b
        k = a / sh.tp if split == "row" else a
        out.append((tokens, n, k, 1))
    g = 2 if m.gated else 1
    h = m.hidden
    if not moe:
        out += [(tokens, g * m.ffn / sh.tp, h, 1), (tokens, h, m.ffn / sh.tp, 1)]
        return out
    if m.shared_experts:
        width = m.shared_experts * m.expert_ffn / sh.tp
        out += [(tokens, g * width, h, 1), (tokens, h, width, 1)]
    load = t.imbalance if not m.capacity_factor else min(t.imbalance, m.capacity_factor)
    arriving = tokens / sh.tp * sh.etp                   # tokens this rank's experts serve
    per_expert = arriving * m.top_k * sh.ep / m.experts * load
    local = m.experts // sh.ep
    out += [(per_expert, g * m.expert_ffn / sh.etp, h, local),
            (per_expert, h, m.expert_ffn / sh.etp, local)]
    return out


#: Host seconds to issue one kernel from an eager PyTorch module (Python, the dispatcher, the
#: autograd bookkeeping and cudaLaunchKernel): an order-of-magnitude figure, not fitted
#: (benchmarks/README.md reports the rows at 10 and 30 us as well).
HOST_LAUNCH = value("compute.host_launch")
#: Kernels of an MoE layer's dispatch segment per micro-batch that do not scale with the local
#: experts (router scores, top-k, the token-count exchange, permute, sort by expert, the
#: activation, unpermute): about ten forward and twenty backward.
MOE_SEGMENT_LAUNCHES = (10, 20)
#: Kernels of the rest of the layer (norms, the attention projections with their fp8 casts,
#: rotary embedding, the attention kernel, residual adds): about twenty backward.
LAYER_BACKWARD_LAUNCHES = 20


def host_bound(m: Transformer, sh: Shape, fp8: bool, experts_fwd: float, layer_bwd: float,
               forwards: float = 1, extra: tuple[int, int] = (0, 0)) -> float:
    """Seconds per MoE layer and micro-batch the GPU waits for the host to issue kernels.

    Forward: Megatron-Core's dropless dispatcher copies the per-expert token counts to the
    host every layer (the all-to-all's split sizes and the grouped GEMM's ``m_splits`` are
    host integers; its README: the dynamic shapes make MoE layers uncapturable by CUDA
    graphs), so the GPU queue is empty after the copy and the expert segment that follows
    runs no faster than the host issues it; the rest of the layer (attention) is issued
    faster than it runs. With tokens dropped and padded to capacity (``Training.token_drop``)
    there is no copy to wait for (token_dispatcher.py, ``_maybe_dtoh_and_synchronize``: the
    copy and the ``d2h_event.synchronize()`` run only ``if not self.drop_and_pad``): the host
    runs ahead, and the forward waits on it only when its launches outlast the whole layer's
    forward, the caller's ``experts_fwd``. Transformer Engine's GroupedLinear launches one GEMM
    per local expert (``--moe-grouped-gemm``: "launch multiple local GEMM kernels in multiple
    streams"), each with an fp8 cast of its input under fp8: two GEMMs per expert forward,
    four backward (data and weight gradients); its maintainers attribute the gap between
    the module and its GEMMs to that host work (TransformerEngine issue #1499: torch.split
    and 2 x num_gemms torch.empty calls under the fp8 multi-cast, "not trivial to
    eliminate"). The forward segment takes the longer of the experts' GEMM time
    (``experts_fwd``) and its launches x ``HOST_LAUNCH``, once per forward (a full
    recompute's forward syncs again). Backward needs no copy (the splits are kept from the
    forward), so the host runs ahead across layers and only the whole layer's launches
    against its GPU time (``layer_bwd``) count. ``extra``: the (forward, backward) launches
    an eager clamp and per-expert biases add (``epilogue.launches``). Returns the excess over
    the GPU time:
    fine-grained experts at small micro-batches (128 experts, 16 per GPU, ~2K tokens each)
    are host-bound; large experts are not."""
    local = max(1, m.experts // max(1, sh.ep))
    per_gemm = 2 if fp8 else 1
    fwd = HOST_LAUNCH * (MOE_SEGMENT_LAUNCHES[0] + 2 * local * per_gemm + extra[0])
    bwd = HOST_LAUNCH * (LAYER_BACKWARD_LAUNCHES + MOE_SEGMENT_LAUNCHES[1] +
                         4 * local * per_gemm + extra[1])
    return forwards * max(0.0, fwd - experts_fwd) + max(0.0, bwd - layer_bwd)


#: Kernels of one dense layer and micro-batch as Megatron's eager ``ParallelTransformerLayer``
#: issues them (bigscience-workshop/Megatron-DeepSpeed ``megatron/model/transformer.py``,
#: 2022): forward about 20 (two fused layer norms, the QKV, attention-output and two MLP
#: GEMMs, the score and context batched GEMMs, the fused scale-mask-softmax, the fused
#: bias-GeLU, two bias-dropout-adds, the copies around the head split and the two tensor
#: all-reduces); backward about 50 (two GEMMs per forward GEMM, a backward kernel per other
#: op, and AccumulateGrad's add per weight and bias, twelve). Counted from the code, not fitted.
LAYER_LAUNCHES = (20, 50)


def blocking(m: Transformer, t, layers: int, microbatches: int) -> float:
    """Seconds a step's GPU idles between launches on a stage of ``layers`` layers when every
    launch waits for the one before to finish (``CUDA_LAUNCH_BLOCKING=1``,
    ``Training.launch_blocking``): the host's issue time per kernel (``HOST_LAUNCH``) is no
    longer hidden behind the kernels in flight, so each of the layer's kernels (forward, the
    full recompute's second forward, backward) adds it, per micro-batch."""
    if not t.launch_blocking:
        return 0.0
    forwards = 2 if t.recompute == "full" else 1
    return layers * microbatches * HOST_LAUNCH * \
        (LAYER_LAUNCHES[0] * forwards + LAYER_LAUNCHES[1])


#: Seconds per transformer layer and micro-batch on a pipeline stage that no kernel's size
#: explains, under PyTorch's FSDP: the host's hooks and synchronisation the GPU waits on (the
#: registry's ``compute.layer_microbatch``, fitted across sources by
#: benchmarks/plan_calibration.py --fit and refitted with each source left out by
#: benchmarks/plan_validation.py). Read at call time, so that those fits can move it.
LAYER_MICROBATCH = value("compute.layer_microbatch")


def fixed_per_layer(t, layers: int, moe_layers: int = 0, paired: float = 0.0) -> float:
    """Seconds one micro-batch of a stage of ``layers`` layers (``moe_layers`` of them MoE
    layers) pays beyond its kernels where the host has to wait for the GPU inside a layer, so
    that the queue drains and the GPU idles while the host catches up.

    PyTorch's FSDP (``Training.fsdp`` without Megatron's distributed optimizer), every layer:
    its hooks run on the host around every wrapped layer, each micro-batch, forward and
    backward. FSDP1 (Composer's, llm-foundry's) also makes the host wait on the GPU there
    (torch/distributed/fsdp/_runtime_utils.py ``_unshard``: with ``limit_all_gathers`` the
    CPU calls ``event.synchronize()`` on an earlier gather's event, the
    "FullyShardedDataParallel.rate_limiter" range, before it issues the next layer's
    all-gather); FSDP2 (torchtitan's, torchao's, AutoModel's ``fully_shard``) does per-layer
    host work of its own (the all-gather's copy-in and copy-out, the reduce-scatter's).

    Megatron-Core, every MoE layer: its dropless token dispatcher copies the per-expert token
    counts to the host and waits for them (megatron/core/transformer/moe/token_dispatcher.py,
    ``_maybe_dtoh_and_synchronize``: ``self.d2h_event.synchronize()`` at the dispatcher's
    ``cuda_sync_point``, "before_ep_alltoall" with expert or tensor parallelism, to get "the
    ``input_splits`` and ``output_splits`` CPU values"), once per layer and micro-batch. The
    flex dispatcher's backends wait too (DeepEP: ``num_out_tokens=self.tokens_per_expert.sum()
    .item()`` in ``_DeepepManager.get_permuted_hidden_states_by_experts``; HybridEP: an unset
    ``num_permuted_tokens`` "will cause a CPU sync"), at the Megatron-LM commit
    Megatron-Bridge v0.2.0 pins (0d8e0714). With tokens dropped and padded to capacity
    (``Training.token_drop``; Megatron-Bridge's ``--use_tokendrop``, ``apply_moe_token_drop``:
    capacity factor 1.0 and ``moe_pad_expert_input_to_capacity=True``) every split is the
    capacity, known on the host, and the dispatcher skips the copy and the wait (``if not
    self.drop_and_pad``), so those MoE layers are not charged. Under the EP A2A overlap
    (``ep_overlap``) with the all-to-all dispatcher, a forward paired with another
    micro-batch's backward (``paired``: that share of the step's passes, ``ep_overlap.paired``)
    does not drain the queue: the combined schedule issues the other micro-batch's expert
    backward between the token counts' copy and the wait (megatron/core/models/common/
    model_chunk_schedule_plan.py, ``TransformerLayerSchedulePlan.run``: ``f_layer.post_attn``
    (router and ``dispatch_preprocess``, whose ``_maybe_dtoh_and_synchronize(
    "before_permutation_1")`` issues the copy on the side stream), then ``b_layer.mlp.backward``,
    then ``f_layer.moe_dispatch`` (``token_dispatch``: the wait, "before_ep_alltoall")); the
    copy's event waits only for the work issued before it, so the GPU runs the other
    micro-batch's backward while the host waits. Only the warm-up and cool-down passes, which
    run alone, pay. DeepEP's wait (``.item()`` after its dispatch) has no such gap.

    No source measures the seconds: one value is fitted across the sources of both
    families (``compute.layer_microbatch``). Megatron-FSDP (``fsdp`` with
    ``distributed_optimizer``, megatron/core/distributed/fsdp) gathers parameters by its own
    buckets in one ``ParamAndGradBuffer`` and is not charged for its dense layers, nor are
    frameworks that keep the weights (Megatron's own schedule, ZeRO-1/2): the rows of those
    sources do not ask for it (docs/plan.md, 'A cost per layer and micro-batch')."""
    if t.fsdp and not t.distributed_optimizer:
        return layers * LAYER_MICROBATCH
    return 0.0 if t.token_drop else moe_layers * LAYER_MICROBATCH * (1.0 - paired)


#: Bytes per second per direction between a GPU and its CPU's memory, for CPU offloading: a
#: Grace CPU's NVLink-C2C, 900 GB/s both ways (NVIDIA GB200 NVL72 and GH200 datasheets), and
#: otherwise a PCIe x16 slot, Gen5 on Hopper and Blackwell HGX boards and Gen4 on Ampere
#: (library/nvidia/links.topo's pcie5 and pcie4).
HOST_LINK = {"GB200": 450e9, "GB300": 450e9, "GH200": 450e9}
HOST_PCIE = {"ampere": 31.5e9}
HOST_PCIE_DEFAULT = 63e9


def host_link(gpu_name: str) -> float:
    """Bytes per second per direction a GPU of that name moves to or from its CPU's memory."""
    for chip, rate in HOST_LINK.items():
        if chip in gpu_name.upper():        # the library's "B200_GB200"
            return rate
    return HOST_PCIE.get(generation(gpu_name), HOST_PCIE_DEFAULT)


def offload(m: Transformer, t, sh: Shape, gpu_name: str, layer_time: float) -> float:
    """Seconds per micro-batch CPU offloading (``Training.offload_layers``) adds: each offloaded
    layer's activations go to host memory during the next layer's forward and come back during
    the backward of the layer after it (Megatron-Core's group offload handler, one layer
    ahead), so only a transfer longer than the compute it overlaps shows: per layer,
    max(0, transfer - forward) + max(0, transfer - backward), with the forward a third of the
    layer's ``layer_time`` (forward, and a backward of two) and the transfer its activations
    over ``host_link``."""
    if not t.offload_layers:
        return 0.0
    move = activation_per_layer(m, t, sh) * m.seq * t.microbatch / sh.cp / host_link(gpu_name)
    forward = layer_time / 3
    return t.offload_layers * (max(0.0, move - forward) + max(0.0, move - 2 * forward))


#: Bytes an fp8 cast moves per element of a GEMM input (Transformer Engine): a bf16 read, an
#: fp8 write and the transposed fp8 copy the weight gradient reads.
FP8_CAST_BYTES = 4.0


def _elementwise(m: Transformer, t, sh: Shape, moe: bool,
                 fp8: bool = False) -> tuple[float, float]:
    """Bytes of element-wise memory traffic per token of one layer's forward pass on one GPU:
    (everything, the softmax path alone). Norms, residual adds and dropouts run on the hidden
    stream (split over tp only with sequence parallelism), the activation function on the MLP,
    the softmax path (without flash attention) on heads x seq scores."""
    h = m.hidden
    stream = 2 * (10 * h + (5 * h if m.dropout else 0))
    stream /= sh.tp if t.sequence_parallel and sh.tp > 1 else 1
    width = m.expert_ffn * (m.top_k * t.imbalance + m.shared_experts) if moe else m.ffn
    act = 2 * matrices(m) * width / sh.tp
    # MoE: each routed copy of a token is permuted to its expert and back (read and write,
    # twice), and the router's top-k and scores run per token
    permute = 8 * m.top_k * h / sh.tp if moe else 0.0
    core = 2 * m.heads * m.seq * (2 + (2.5 if m.dropout else 0)) / sh.tp
    cast = 0.0
    if fp8:     # every fp8 GEMM's input is cast: the projections' and the MLP's (K widths)
        ins = h * (1 + (0 if moe else 1)) + m.heads * m.dhead
        ins += (m.expert_ffn * m.top_k * t.imbalance + h * m.top_k +
                m.expert_ffn * m.shared_experts + (h if m.shared_experts else 0)) if moe \
            else m.ffn
        cast = FP8_CAST_BYTES * ins / sh.tp
    return stream + act + permute + cast + (0 if t.flash_attention else core), core


def _attention(m: Transformer, t, sh: Shape, tokens: float, r: _Rates) -> tuple[float, float,
                                                                                  float]:
    """(forward seconds, backward seconds, forward FLOPs) of one layer's attention core."""
    heads = m.heads / sh.tp
    width = qk_dim(m) + m.dhead
    if t.flash_attention:
        flops = tokens * m.seq * heads * width          # causal: half of 2 x T x s x width
        chunk = m.seq / (2 * sh.cp) if sh.cp > 1 else m.seq
        plateau = r.curve.attention_fa2 if t.attention_kernel == "fa2" and \
            r.curve.attention_fa2 else r.curve.attention
        fwd = flops / (r.peak * plateau * shape_factor(r.curve.c, chunk))
        return fwd, ATTENTION_BACKWARD * fwd, flops
    batch = heads * tokens / m.seq
    shapes = [(m.seq, m.seq, qk_dim(m), batch), (m.seq, m.dhead, m.seq, batch)]
    fwd, flops = _gemms(r, shapes, False)
    return fwd, 2 * fwd, flops


def _modules_again(m: Transformer, t, sh: Shape, r: _Rates, shapes, moe: bool,
                   mods: tuple[str, ...], fp8: bool) -> tuple[float, float, float]:
    """(GEMM seconds, FLOPs, element-wise bytes per token) one layer's module recompute redoes
    in its backward (Megatron-Core's ``recompute_modules``; the attention core is costed with
    the attention kernels): ``layernorm`` its two norms, ``moe_act`` the experts' activation,
    ``mla_up_proj`` MLA's two up-projection GEMMs, ``mlp`` a dense layer's MLP."""
    if not mods or mods == ("core_attn",):
        return 0.0, 0.0, 0.0
    h = m.hidden
    sp = sh.tp if t.sequence_parallel and sh.tp > 1 else 1
    again = []
    bytes_ = 0.0
    if "layernorm" in mods:
        bytes_ += 2 * 2 * (2 * h) / sp             # two norms: read and write the hidden stream
    n_att = len(attention_matrices(m))
    if "mla_up_proj" in mods and m.kv_lora_rank:
        lora = {m.q_lora_rank, m.kv_lora_rank} - {0}
        again += [s for s, (a, _, _) in zip(shapes[:n_att], attention_matrices(m)) if a in lora]
    if moe and "moe_act" in mods:
        bytes_ += 2 * matrices(m) * m.expert_ffn * m.top_k * t.imbalance / sh.tp
    if not moe and "mlp" in mods:
        again += list(shapes[n_att:])
        bytes_ += 2 * matrices(m) * m.ffn / sh.tp
    g_time, g_flops = _gemms(r, again, fp8) if again else (0.0, 0.0)
    return g_time, g_flops, bytes_


def _stage(m: Transformer, t, sh: Shape, r: _Rates, layers: int, dense: int,
           logits: bool) -> tuple[float, float, float, float, float, tuple[float, ...]]:
    """(seconds, FLOPs, GEMM seconds, element-wise seconds, attention seconds, MoE layer
    segments) of one micro-batch on a stage of ``layers`` layers, ``dense`` of them without
    experts. The segments are one MoE layer's attention forward, MLP forward, attention
    backward and MLP backward (GEMMs and attention kernels), the compute Megatron-Core's EP
    A2A overlap hides each of the other micro-batch's all-to-alls behind."""
    tokens = m.seq * t.microbatch / sh.cp
    fp8 = r.fp8 != r.peak
    full = t.recompute == "full"
    gemm = flops = ew = att = 0.0
    segments: tuple[float, ...] = ()
    mods = modules(t)
    for moe, n in ((False, dense), (True, layers - dense)):
        if n <= 0:
            continue
        shapes = _layer_gemms(m, t, sh, tokens, moe)
        g_time, g_flops = _gemms(r, shapes, fp8)
        fp8_time = g_time if fp8 else 0.0           # the layer's fp8 GEMMs, one forward
        if moe:
            router, r_flops = _gemms(r, [(tokens, m.experts, m.hidden, 1)], False)
            g_time, g_flops = g_time + router, g_flops + r_flops
        a_fwd, a_bwd, a_flops = _attention(m, t, sh, tokens, r)
        redo = 1.0 if t.recompute == "full" or "core_attn" in mods else 0.0
        passes = 3 + (1 if full else 0)
        if t.recompute == "selective" and t.fsdp:
            # torchtitan's per-op policy keeps the attention output and recomputes every
            # other matrix multiplication
            redo, passes = 0.0, 3 + op_policy(m, sh, moe)[1]
        bytes_, softmax = _elementwise(m, t, sh, moe, fp8)
        # the fp8 recipe beyond tensorwise scaling (``fp8``): slower GEMMs over every pass
        # (a recompute's forwards too), more bytes cast and rescaled
        rec = RECIPES[t.fp8_recipe] if fp8 else None
        rec_gemm = fp8_time * slowdown(rec, passes) if rec else 0.0
        rec_bytes = extra_bytes(rec, shapes) if rec else 0.0
        # the experts' clamp and biases outside the fused kernels: forward, backward, redone
        e_fwd, e_bwd, e_again = epilogue.bytes_per_token(m, t, sh) if moe else (0.0, 0.0, 0.0)
        if moe:
            # the layer's backward on the GPU: GEMMs, attention, element-wise work
            bwd = 2 * g_time + a_bwd + tokens * (2 * bytes_ + e_bwd) / (r.hbm * t.hbm_efficiency)
            experts = _gemms(r, shapes[-2:], fp8)[0]       # the local experts' two GEMMs
            n_att = len(attention_matrices(m))
            attn_f = _gemms(r, shapes[:n_att], fp8)[0] + router + a_fwd
            mlp_f = _gemms(r, shapes[n_att:], fp8)[0]
            segments = (attn_f, mlp_f, 2 * (attn_f - a_fwd) + a_bwd, 2 * mlp_f)
            # without the dispatcher's wait the forward's launches race the whole layer's
            # forward, not the experts' GEMMs alone (``host_bound``)
            ahead = attn_f + mlp_f if t.token_drop else experts
            g_time += (r.curve.moe_layer + host_bound(
                m, sh, fp8, ahead, bwd, passes - 2,
                epilogue.launches(m, t, max(1, m.experts // max(1, sh.ep))))) / passes
        # Megatron-Core's module recompute (``recompute_modules``): the forwards it redoes
        again, again_flops, again_bytes = _modules_again(m, t, sh, r, shapes, moe, mods, fp8)
        gemm += n * (g_time * passes + again + rec_gemm)
        flops += n * (g_flops * passes + a_flops * (3 + redo) + again_flops)
        att += n * (a_fwd * (1 + redo) + a_bwd)
        # what the backward redoes: the whole layer (full), or the modules named and the
        # softmax path without flash attention (``modules``: also with recompute "none" when
        # DeepSeek-V3's norms are recomputed)
        scores = t.recompute == "selective" and not t.flash_attention and "core_attn" in mods
        extra = bytes_ if t.recompute == "full" else (softmax if scores else 0.0) + again_bytes
        ew += n * (tokens * (3 * bytes_ + extra + e_fwd + e_bwd + e_again) + rec_bytes) / \
            (r.hbm * t.hbm_efficiency)
    if logits:
        l_time, l_flops = _gemms(r, [(tokens, m.vocab / sh.tp, m.hidden, 1)], False)
        gemm += 3 * l_time
        flops += 3 * l_flops
    return gemm + ew + att, flops, gemm, ew, att, segments


def accumulation(m: Transformer, t, sh: Shape, lay: Layout, stage: str, r: _Rates,
                 microbatches: int, per_weight: float, skipped: int) -> float:
    """Seconds per micro-batch (averaged over the step's) of the gradient-accumulation pass
    over the weights one GPU of ``stage`` holds, its embedding or output layer included at the
    ends of a pipeline (``GRAD_ACCUMULATION``)."""
    layers = {"last": lay.last, "first": lay.first, "middle": lay.middle}[stage]
    weights = sum(stage_parameters(m, sh, layers))
    if sh.pp == 1:
        weights += (1 if m.tied else 2) * m.vocab * m.hidden / sh.tp
    elif stage != "middle":
        weights += m.vocab * m.hidden / sh.tp
    passes = max(0, microbatches - skipped)
    return per_weight * weights / (r.hbm * t.hbm_efficiency) * passes / microbatches


def compute(m: Transformer, t, sh: Shape, lay: Layout, gpu: GPUFigures,
            microbatches: int) -> Compute:
    """Seconds of compute per step on one GPU of the slowest pipeline stage: its micro-batch
    time x the micro-batches of a step."""
    r = rates(gpu, t)
    dense = m.dense_layers if m.experts else m.layers
    first_dense = min(dense, lay.first)
    stages = {"last": (lay.last, max(0, min(lay.last, dense - first_dense - lay.middle *
                                            max(0, sh.pp - 2))) if sh.pp > 1 else first_dense,
                       True)}
    if sh.pp > 1:
        stages["first"] = (lay.first, first_dense, False)
        if sh.pp > 2:
            stages["middle"] = (lay.middle, min(lay.middle, max(0, dense - first_dense)), False)
    best = None
    for name, (layers, d, logits) in stages.items():
        got = _stage(m, t, sh, r, layers, d if m.experts else layers, logits)
        if best is None or got[0] > best[1][0]:
            best = (name, got)
    name, (time, flops, gemm, ew, att, segments) = best
    dense_here = stages[name][1] if m.experts else stages[name][0]
    per_weight, skipped = GRAD_ACCUMULATION[t.grad_accumulation]
    acc = accumulation(m, t, sh, lay, name, r, microbatches, per_weight, skipped) \
        if per_weight else 0.0
    time, ew = time + acc, ew + acc
    layers = {"last": lay.last, "first": lay.first, "middle": lay.middle}[name]
    launch = blocking(m, t, layers, microbatches) / microbatches
    moved = offload(m, t, sh, gpu.name, time / max(1, layers))
    on = ep_overlap.applies(t, sh)
    fixed = fixed_per_layer(t, layers, layers - dense_here,
                            ep_overlap.paired(t, sh, microbatches) if not t.deepep else 0.0)
    views = zero3.host_time(m, t, sh, layers, microbatches) / microbatches
    time += launch + moved + fixed + views
    peak_used = r.fp8 if r.fp8 != r.peak else r.peak
    eff = flops / (gemm + att) / peak_used if gemm + att else 0.0
    return Compute(time * microbatches, flops * microbatches, gemm * microbatches,
                   ew * microbatches, eff, att * microbatches, time, name,
                   segments if on else (),
                   ep_overlap.sm_share(generation(gpu.name)) if on else 0.0,
                   acc * microbatches, launch * microbatches, moved * microbatches,
                   fixed * microbatches, views * microbatches)
