"""How a ZeRO-3 implementation hands its collectives to PyTorch, and the host time that costs.

A ZeRO-3 step all-gathers every weight matrix before each use and reduce-scatters every
gradient. What the host does per call depends on the implementation (``Training.zero3_impl``,
one record of ``ZERO3_IMPLS`` per family of releases):

- ``flat`` (PyTorch FSDP, Megatron-FSDP, DeepSpeed from v0.6.0 on a PyTorch that has
  ``_all_gather_base`` and ``_reduce_scatter_base``): the collective reads and writes one flat
  buffer, so a call's host work does not grow with the data-parallel size. No cost here.
  DeepSpeed v0.5.5-v0.5.10 sits between the two (flat gathers, per-rank reduce-scatters) and
  has no record: no row runs it.
- ``deepspeed-0.3`` (DeepSpeed v0.3.12, 2021-03-12, its first ZeRO-3, to v0.5.4,
  2021-10-06): every call hands PyTorch a Python list of world-size views, one per rank, and
  PyTorch's ProcessGroupNCCL copies each view on its own. DeepSpeed v0.3.13
  deepspeed/runtime/zero/partition_parameters.py, ``_allgather_param``:
  ``for i in range(self.world_size): partitions.append(flat_tensor.narrow(0, partition_size
  * i, partition_size))`` then ``torch.distributed.all_gather(partitions, partitions[self.rank],
  ...)``; ``_reduce_scatter_gradient``: ``for i in range(self.world_size): ... input =
  param.grad.view(-1).narrow(0, start, partition_size)`` then ``torch.distributed.
  reduce_scatter(input_list[rank], input_list, ...)``, and ``_reduce_scatter_gradients`` calls
  it once per parameter, biases and norms included. PyTorch's ProcessGroupNCCL (1.8,
  torch/lib/c10d/ProcessGroupNCCL.cpp) flattens such lists: ``allgather``'s post-processing
  runs ``outputTensors[i][j].copy_(outputFlattened[i][j], true)`` for every rank j, and
  ``reduce_scatter``'s pre-processing ``inputFlattened[i][j].copy_(inputTensors[i][j], true)``,
  each after a ``recordStream``. So the host issues one copy per rank per call. DeepSpeed
  v0.5.5 replaced the gather's list by ``_all_gather_base`` on one flat tensor when PyTorch
  has it (PR #1188, "ZeRO3, improved parameter all-gather operation", c0eeb69d) and v0.6.0
  the reduce-scatter's by ``_reduce_scatter_base`` (deepspeed/runtime/comm/coalesced_collectives.py, whose fallback
  warns that the list form "will result in suboptimal performance").

That host time is on the critical path: ``_allgather_param`` calls ``torch.cuda.synchronize()``
before every gather and ``fetch_sub_module`` waits for the gathers in flight and synchronizes
the device again (``_synchronize_communication``) before a module runs, so the GPU has nothing
queued while the host builds and issues the next module's views and copies (the forward hook
returns, and the module's kernels are issued, only after that). Each per-rank copy is charged
as one host launch (``compute.host_launch``, the registry's order-of-magnitude figure).

Calls per layer and micro-batch: a gather of each weight matrix in the forward, again in a full
recompute's forward and again in the backward, except the layer's last matrix, which the
recompute leaves gathered for its own backward (its reuse distance is 0 parameters, under
``stage3_max_reuse_distance``); biases and norms stay gathered (``stage3_param_persistence_
threshold``, 1e5 elements) but their gradients are reduce-scattered by a call each like the
weights'. Counted: the weight matrices and the two norms' weights; GPT-style biases and
LayerNorm biases (six more calls per layer in Megatron's GPT) and the embeddings' few calls are
not, so the figure is a lower bound.
"""

from __future__ import annotations

import attrs

from ..ir.system import Transformer
from .constants import value
from .mapping import Shape
from .params import attention_matrices, matrices


@attrs.frozen
class Zero3Impl:
    """One ZeRO-3 implementation: whether each collective goes to PyTorch as a list of
    per-rank views (one host copy per rank and call) and the releases that do so."""

    name: str
    per_rank_views: bool
    releases: str
    source: str


ZERO3_IMPLS = {
    "flat": Zero3Impl("flat", False, "PyTorch FSDP, Megatron-FSDP, DeepSpeed v0.6.0 and later",
                      "torch.distributed._all_gather_base / _reduce_scatter_base on one flat "
                      "buffer (DeepSpeed PR #1188, v0.5.5, for the gathers; "
                      "runtime/comm/coalesced_collectives.py, v0.6.0, for the reduce-scatters)"),
    "deepspeed-0.3": Zero3Impl("deepspeed-0.3", True,
                               "DeepSpeed v0.3.12 (2021-03-12) to v0.5.4 (2021-10-06)",
                               "deepspeed/runtime/zero/partition_parameters.py at v0.3.13: "
                               "_allgather_param and _reduce_scatter_gradient pass world-size "
                               "lists of views to torch.distributed.all_gather and "
                               "reduce_scatter"),
}

#: Host seconds per rank and call: one host-issued copy (``compute.host_launch``).
HOST_LAUNCH = value("compute.host_launch")
#: Norm weights per layer (before attention and before the MLP), each its own gradient call.
NORMS = 2


def calls(m: Transformer, recompute: str) -> tuple[int, int]:
    """(all-gathers, reduce-scatters) one layer makes per micro-batch under the per-rank-view
    implementation (the module's docstring)."""
    weights = len(attention_matrices(m)) + matrices(m)
    gathers = 3 * weights - 1 if recompute == "full" else 2 * weights
    return gathers, weights + NORMS


def host_time(m: Transformer, t, sh: Shape, layers: int, microbatches: int) -> float:
    """Seconds per step one GPU's host spends issuing per-rank copies on the critical path
    (0 unless ZeRO-3 runs with ``zero3_impl`` of per-rank views)."""
    impl = ZERO3_IMPLS[t.zero3_impl]
    if t.zero < 3 or t.fsdp or not impl.per_rank_views or sh.dp < 2:
        return 0.0
    gathers, reduces = calls(m, t.recompute)
    return layers * microbatches * (gathers + reduces) * sh.dp * HOST_LAUNCH
