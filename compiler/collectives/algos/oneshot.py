"""Serving engines' own all-reduce kernels over NVLink peer memory (``owner="engine"``: NCCL
never runs them; ``topoc cost --algorithm oneshot|twoshot`` names them, and ``infer`` picks
them by its engine's rule, ``collectives.engines``):

- ``oneshot``: every rank reads the whole buffer of each of the n - 1 others through peer
  memory and reduces it locally, between two flag barriers (TensorRT-LLM's ONESHOT,
  vLLM's and SGLang's ``cross_device_reduce_1stage``). Each GPU's NVLink port carries
  (n - 1) x size in and out; two synchronisations on the critical path.
- ``twoshot``: a reduce-scatter then an all-gather through peer memory (TWOSHOT,
  ``cross_device_reduce_2stage``): 2 (n - 1) / n x size per port, as a ring, in two passes
  with three barriers, without the ring's 2 (n - 1) steps.

- ``multimem``: an all-reduce through the NVLink switches' multicast objects (NVLS hardware,
  PTX ``multimem.ld_reduce`` / ``multimem.st``; torch's ``symm_mem.multimem_all_reduce_``,
  which vLLM's symmetric-memory all-reduce runs): each GPU sends its buffer up to the switches
  once and receives the reduced result once, between two flag barriers, without NCCL's
  channels, proxy or base latency. The switches' reduction runs at the NVLS efficiency NCCL's
  model gives the same hardware (``tuning.NVLS_EFFICIENCY``).

All run inside one NVLink domain of peer-accessible GPUs (the engines check peer access and
fall back to NCCL elsewhere): a group over more than one island is refused; ``multimem`` also
needs NVLink switches (an NVSwitch node or rack).

Latency: each barrier or pass is one NVLink hop at the latency NCCL's own tables give a hop of
its flag-polling protocol (tuning.cc hwLat[NVLINK][RING][LL], ``tuning.HW_LAT``: the kernels
signal through flags written to peer memory and polled, as LL does), no NCCL base latency (no
proxy, no channels to set up); the launch is the one every call pays (``cost.options``).
"""

from __future__ import annotations

from ..loads import Loads
from ..tuning import NVLS_EFFICIENCY, Profile, tree_hops
from .base import Algorithm, CostError, Group, Shape
from .nvls import NO_SWITCHES, nvls_loads

#: Hops on the critical path: one-shot's start barrier and its read pass (the end barrier
#: overlaps the next kernel); two-shot's start barrier, reduce-scatter pass, middle barrier and
#: all-gather pass (vLLM csrc/custom_all_reduce.cuh: barrier_at_start, barrier_at_end<true>
#: between the stages; TensorRT-LLM customAllReduceKernels.cu the same structure).
ONESHOT_HOPS = 2
TWOSHOT_HOPS = 4

ONE_ISLAND = ("an engine's peer-memory all-reduce runs inside one NVLink domain; across "
              "islands the engines fall back to NCCL")


def _pairs(g: Group, share: float) -> Loads:
    loads = Loads(g.res)
    gpu = [x.id for x in g.system.gpus]
    for a in g.ranks:
        for b in g.ranks:
            if a != b:
                loads.add(gpu[b], gpu[a], share)      # a reads b's buffer
    return loads


def _one_island(g: Group) -> None:
    if len({g.system.locality.island[r] for r in g.ranks}) > 1:
        raise CostError(ONE_ISLAND)


def oneshot_shape(g: Group) -> Shape:
    _one_island(g)
    return Shape(((_pairs(g, 1.0), 1.0),))


def twoshot_shape(g: Group) -> Shape:
    _one_island(g)
    n = len(g.ranks)
    part = _pairs(g, 1.0 / n)
    return Shape(((part, 1.0), (part, 1.0)))


def multimem_shape(g: Group) -> Shape:
    _one_island(g)
    agents = g.system.locality.nvlink_agents(g.ranks)
    if agents is None:
        raise CostError(NO_SWITCHES)
    return Shape(((nvls_loads(g, agents), 1.0),))


def multimem_bus(p: Profile, collective: str, n: int, size: int, proto: int,
                 raw: float) -> float:
    """The switches' reduction rate: NVLS's efficiency on this architecture, no channel kept
    back for NCCL's synchronisation."""
    return raw * NVLS_EFFICIENCY.get(p.arch, 0.0)


def _latency(hops: int):
    def latency(p: Profile, collective: str, n: int, proto: int) -> float:
        _, intra, _ = tree_hops(p, "ring", 0)       # LL's hop: flags in peer memory
        return hops * intra
    return latency


def bus(p: Profile, collective: str, n: int, size: int, proto: int, raw: float) -> float:
    """The loads' own rate: no channels to fill, no protocol that halves the bytes."""
    return raw


ONESHOT = Algorithm(
    "oneshot", "one-shot all-reduce (engine)",
    collectives=("allreduce",), protocols=("Simple",),
    shape=oneshot_shape, latency=_latency(ONESHOT_HOPS), bus=bus,
    net_steps=lambda p, c: 0.0, owner="engine")

TWOSHOT = Algorithm(
    "twoshot", "two-shot all-reduce (engine)",
    collectives=("allreduce",), protocols=("Simple",),
    shape=twoshot_shape, latency=_latency(TWOSHOT_HOPS), bus=bus,
    net_steps=lambda p, c: 0.0, owner="engine")

MULTIMEM = Algorithm(
    "multimem", "multimem (NVLS) all-reduce (engine)",
    collectives=("allreduce",), protocols=("Simple",),
    shape=multimem_shape, latency=_latency(ONESHOT_HOPS), bus=multimem_bus,
    net_steps=lambda p, c: 0.0, owner="engine")
