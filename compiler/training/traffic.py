"""The collectives one GPU takes part in per training step, by group kind, as Megatron-LM runs
them, each with the window of compute it can hide behind:

- tp: 4 all-reduces per layer and micro-batch (2 forward on the critical path, 2 backward
  behind the weight-gradient GEMMs, ``wgrad``), or 4 all-gathers and 4 reduce-scatters with
  sequence parallelism; full recompute repeats the forward ones.
- cp: ring attention passes each rank's keys and values around the cp group once forward and
  once backward, with their gradients coming back (an all-gather and a reduce-scatter in bytes);
  it hides only behind the attention kernels (``attention``).
- ep: 4 all-to-alls per MoE layer and micro-batch (dispatch and combine, forward and backward);
  with ``deepep`` a token crosses the network once per destination node, not once per expert,
  and inside one node goes once per destination GPU (``analysis.strategy.dedup_share`` scales
  the bytes by the group's node or GPU count). With
  Megatron-Core's EP A2A overlap (``ep_overlap``) those of the passes paired with another
  micro-batch's pass hide behind its compute (window ``ep_overlap``); the rest stay exposed.
- pp: one activation forward and one gradient back per micro-batch and model chunk.
- Gradients: dense ones reduce over the dp x cp group (``dpcp``; ``dp`` when cp = 1), expert
  ones over the expert-data-parallel group (``edp``), in buckets of Megatron-Core's size in
  parameters (``bucket_params``; one bucket without ``overlap``), fp32 (16-bit
  with ``bf16_grads``, ``pure_bf16`` or fp16: ``memory.reduce_bytes``): an all-reduce, or a
  reduce-scatter and an all-gather of the bf16 weights with a sharded optimizer. Gradients are
  ready only in the last micro-batch's backward, so with ``overlap`` the reduction hides behind
  that (``grad_sync``) and the weight gather behind the first forward (``param_sync``).
- ZeRO-3 and FSDP gather each layer's weights forward and again backward and reduce-scatter
  its gradients, every micro-batch, behind the forward and backward passes; per micro-batch
  the first gather of each pass and the last reduce-scatter sit on the critical path (there is
  no earlier layer to hide them behind). FSDP2 under a pipeline keeps a stage gathered
  across micro-batches: one gather and one reduce-scatter per layer and step. With
  ``fsdp_prefetch`` "post" (FSDP1's BACKWARD_POST, Composer's default) a layer's backward
  gather is issued only after the next layer's gradients are computed, so every backward
  gather sits on the critical path; its reduce-scatter still hides behind the next layer's
  gradient computation (PyTorch's ``BackwardPrefetch`` docstring and FSDP notes: gathers and
  reduce-scatters share one NCCL stream, and the next gather is issued before the current
  reduce-scatter).
"""

from __future__ import annotations

import math

import attrs

from ..ir.system import Transformer, TrafficFlow
from .mapping import Layout, Shape
from .memory import reduce_bytes, sharding
from .ep_overlap import paired
from .params import kv_width, layer_parameters, moe_layers

#: Megatron-Core's default gradient bucket, in parameters (not bytes): max(40 M, 1 M x the
#: data-parallel size), "larger DP sizes need larger buckets to ensure collectives do not
#: become latency-bound" (DistributedDataParallelConfig.bucket_size); without overlap one
#: bucket holds every gradient.
BUCKET_PARAMS, BUCKET_PARAMS_PER_RANK = 40_000_000, 1_000_000


def bucket_params(bucket: int | None, dp: int, overlap: bool) -> float:
    """Parameters per data-parallel gradient bucket: ``bucket`` when set, else Megatron-Core's
    default for ``dp`` data-parallel ranks; unbounded (one bucket) without ``overlap``."""
    if not overlap:
        return float("inf")
    return bucket or max(BUCKET_PARAMS, BUCKET_PARAMS_PER_RANK * dp)


def traffic(m: Transformer, t, sh: Shape, lay: Layout, microbatches: int) \
        -> tuple[TrafficFlow, ...]:
    """Every flow of one step on one GPU of the heaviest stage."""
    flows: list[TrafficFlow] = []
    h, seq = m.hidden, m.seq
    layers = lay.heaviest
    tokens = seq * t.microbatch / sh.cp
    act = int(tokens * h * 2)                              # one bf16 hidden stream
    calls = layers * microbatches
    extra = 1 if t.recompute == "full" else 0              # the recompute forward repeats them
    if sh.tp > 1:
        colls = ("allgather", "reducescatter") if t.sequence_parallel else ("allreduce",)
        for coll in colls:
            if t.async_tp:
                # async TP splits each collective into pieces that run beside the GEMM
                # consuming or producing them: the forward's inside the forward pass, the
                # recompute's and the backward's inside the backward (torchtitan's
                # micro-pipelined all-gather-matmul and matmul-reduce-scatter over symmetric
                # memory; Megatron's tp_comm_overlap); a launch-blocking run hides nothing
                flows.append(TrafficFlow("tp", coll, act, calls * 2, overlap="forward"))
                flows.append(TrafficFlow("tp", coll, act, calls * 2 * (1 + extra),
                                         overlap="backward"))
                continue
            flows.append(TrafficFlow("tp", coll, act, calls * 2 * (1 + extra), overlap="none"))
            flows.append(TrafficFlow("tp", coll, act, calls * 2, overlap="wgrad"))
    if sh.cp > 1:
        split = sh.tp if m.kv_lora_rank else max(1, min(sh.tp, m.kv_heads))
        kv = int(seq * t.microbatch * kv_width(m) * 2 * 2 / split)
        flows.append(TrafficFlow("cp", "allgather", kv, calls * (2 + extra),
                                 overlap="attention"))
        flows.append(TrafficFlow("cp", "reducescatter", kv, calls, overlap="attention"))
    if sh.ep > 1:
        moe = -(-moe_layers(m) * layers // m.layers)
        routed = int(tokens / (sh.tp if t.sequence_parallel else 1) * m.top_k * h * 2
                     * t.imbalance)
        count = moe * microbatches * (4 + 2 * extra)
        dedup = (m.top_k, t.route_nodes) if t.deepep else (0, 0)
        # each paired layer pass carries a dispatch and a combine of the forward micro-batch
        # and of the backward one (``ep_overlap.paired``)
        hidden = 4 * round(moe * microbatches * paired(t, sh, microbatches))
        if hidden:
            flows.append(TrafficFlow("ep", "alltoall", routed, hidden, overlap="ep_overlap",
                                     dedup=dedup))
        flows.append(TrafficFlow("ep", "alltoall", routed, count - hidden, overlap="none",
                                 dedup=dedup))
    if sh.pp > 1:
        split = sh.tp if t.sequence_parallel or t.scatter_gather else 1
        boundary = int(act / split)
        flows.append(TrafficFlow("pp", "sendrecv", boundary, 2 * microbatches * t.interleave,
                                 overlap="none"))
        if t.scatter_gather and not t.sequence_parallel and sh.tp > 1:
            # each rank sends its 1/tp slice over the stage boundary; the receiving stage
            # all-gathers the slices over its tensor-parallel group (Narayanan et al. 2021,
            # sec. 4.1, the scatter/gather optimisation; DeepSpeed's PipelineEngine:
            # is_pipe_partitioned = is_grad_partitioned = is_model_parallel, the received
            # PartitionedTensor's full())
            flows.append(TrafficFlow("tp", "allgather", act, 2 * microbatches * t.interleave,
                                     overlap="none"))
    flows += _gradient_flows(m, t, sh, layers, microbatches)
    if t.launch_blocking:
        # CUDA_LAUNCH_BLOCKING=1: a launch returns only once its kernel has finished, so no
        # collective runs beside a compute kernel (CUDA C++ Programming Guide, "Asynchronous
        # Concurrent Execution": the variable disables the asynchrony of kernel launches);
        # the backward all-reduces the weight-gradient GEMMs would hide wait for them instead
        flows = [attrs.evolve(f, overlap="none") for f in flows]
    return tuple(f for f in flows if f.count > 0 and f.bytes > 0)


def _gradient_flows(m: Transformer, t, sh: Shape, layers: int,
                    microbatches: int) -> list[TrafficFlow]:
    dense_l, router_l, experts_l = layer_parameters(m)
    dense = dense_l * layers / sh.tp + router_l * layers + m.vocab * m.hidden / sh.tp
    experts = experts_l * layers / (sh.ep * sh.etp)
    grad_bytes = reduce_bytes(m, t)
    level = sharding(t)
    out = []
    for kind, params, size in (("dpcp" if sh.cp > 1 else "dp", dense, sh.dpcp),
                               ("edp", experts, sh.edp)):
        if size < 2 or params < 1:
            continue
        if level >= 3:
            # a layer's gather hides behind the previous layer's compute and its gradients'
            # reduce-scatter behind the next one's, so per micro-batch the first gather of
            # each pass and the last reduce-scatter have nothing to hide behind
            per_layer = int(params / max(1, layers) * 2)
            rs = per_layer * grad_bytes // 2
            if t.fsdp and sh.pp > 1:
                # FSDP2 under a pipeline keeps the stage gathered (memory's docstring): one
                # gather in the first forward, one reduce-scatter in the last backward
                out.append(TrafficFlow(kind, "allgather", per_layer, layers - 1,
                                       overlap="forward"))
                out.append(TrafficFlow(kind, "reducescatter", rs, layers - 1,
                                       overlap="backward"))
                out.append(TrafficFlow(kind, "allgather", per_layer, 1, overlap="none"))
                out.append(TrafficFlow(kind, "reducescatter", rs, 1, overlap="none"))
                continue
            n = (layers - 1) * microbatches
            out.append(TrafficFlow(kind, "allgather", per_layer, n, overlap="forward"))
            # BACKWARD_POST: the gather waits for the gradient computation it would hide behind
            out.append(TrafficFlow(kind, "allgather", per_layer, n,
                                   overlap="none" if t.fsdp_prefetch == "post" else "backward"))
            out.append(TrafficFlow(kind, "reducescatter", rs, n, overlap="backward"))
            out.append(TrafficFlow(kind, "allgather", per_layer, 2 * microbatches,
                                   overlap="none"))
            out.append(TrafficFlow(kind, "reducescatter", rs, microbatches, overlap="none"))
            continue
        grads = params * grad_bytes
        buckets = max(1, math.ceil(params / bucket_params(t.bucket, sh.dp, t.overlap)))
        each = int(grads / buckets)
        if level >= 1:
            out.append(TrafficFlow(kind, "reducescatter", each, buckets,
                                   overlap="grad_sync" if t.overlap else "none"))
            # the updated 16-bit weights, 2 bytes a parameter whatever the gradients' dtype
            # (half an fp32 gradient, as much as a 16-bit one)
            out.append(TrafficFlow(kind, "allgather", int(params * 2 / buckets), buckets,
                                   overlap="param_sync" if t.overlap else "none"))
        else:
            out.append(TrafficFlow(kind, "allreduce", each, buckets,
                                   overlap="grad_sync" if t.overlap else "none"))
    return out
